import { Server } from "@modelcontextprotocol/server";

/**
 * v2 keeps a server's protocol era as instance state, set by its serving entry for each
 * per-request instance. Atrium's front servers live for the whole process, one per era, so the
 * 2026-07-28 one is pinned to that era once, through the protected field the SDK's own entry
 * sets (adr/0029). test/integration/mcp-both-eras.test.ts fails if an SDK update moves it.
 */
class EraPin extends Server {
  static pin(server: Server, version: string): void {
    (server as EraPin)._negotiatedProtocolVersion = version;
  }
}

export function pinProtocolEra(server: Server, version: string): void {
  EraPin.pin(server, version);
}
