import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type McpEra, refusedConnect, versionNegotiationFor } from "../helpers/mcp-eras.ts";

// What test/helpers/mcp-eras.ts says the SDK client does with a refused workspace URL, checked
// against the SDK itself, in both eras whatever MCP_ERAS holds today: a server that answers
// every POST the way Atrium's wall does (404, a JSON body that is not JSON-RPC).

let server: Server;
let url: URL;

beforeAll(async () => {
  server = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      response.writeHead(404, { "content-type": "application/json" });
      response.end(JSON.stringify({ error: { code: "workspace_not_found", message: "No such workspace." } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp/ws_0123456789abcdef`);
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
});

describe("a connect the workspace URL refuses with 404", () => {
  it.each<McpEra>(["2025-11-25", "2026-07-28"])("rejects in %s as refusedConnect says", async (era) => {
    const client = new Client(
      { name: "atrium-test", version: "0.0.0" },
      { capabilities: {}, versionNegotiation: versionNegotiationFor(era) },
    );
    const failure = await client
      .connect(new StreamableHTTPClientTransport(url))
      .catch((error: Error) => error);
    expect(failure).toMatchObject(refusedConnect(era, 404));
  });
});
