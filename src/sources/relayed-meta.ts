import type { CallToolResult } from "@modelcontextprotocol/client";
import { HOST_META_PREFIX } from "./caller-meta.ts";

// A remote server's result `_meta` is relayed to Atrium's own client (MCP in either era, REST, a
// task run) as part of Atrium's answer, so two kinds of key it may set are not the remote's to say:
// - host-owned keys (`dev.atrium/…`), Atrium's channel between the router and its platform apps
//   (adr/0030): a remote server cannot speak on it;
// - keys under a prefix MCP reserves, which describe that one hop of the protocol: the remote's
//   `io.modelcontextprotocol/serverInfo` would name it where Atrium is the server the client
//   talks to (the front server adds Atrium's own), a `…/related-task` would name a task Atrium
//   does not hold.

/**
 * Whether a `_meta` key's prefix is reserved for MCP, in any revision Atrium serves. 2025-11-25 and
 * 2026-07-28: its second label is `modelcontextprotocol` or `mcp` (`io.modelcontextprotocol/`,
 * `com.mcp.tools/`). 2025-06-18: such a label is followed by another (`mcp.dev/`,
 * `api.modelcontextprotocol.org/`). `com.example.mcp/` is reserved by neither.
 */
export function isReservedMetaKey(key: string): boolean {
  const slash = key.indexOf("/");
  if (slash < 0) return false;
  const labels = key.slice(0, slash).split(".");
  return labels.some((label, i) => RESERVED_LABELS.has(label) && (i === 1 || i < labels.length - 1));
}

const RESERVED_LABELS = new Set(["modelcontextprotocol", "mcp"]);

/** `result` with the `_meta` keys a remote server may not relay through Atrium dropped. */
export function withRelayableMeta(result: CallToolResult): CallToolResult {
  const meta = result._meta;
  if (!meta || !Object.keys(meta).some(notRelayable)) return result;
  const kept = Object.fromEntries(Object.entries(meta).filter(([key]) => !notRelayable(key)));
  return { ...result, _meta: kept };
}

function notRelayable(key: string): boolean {
  return key.startsWith(HOST_META_PREFIX) || isReservedMetaKey(key);
}
