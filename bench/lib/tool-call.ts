// The one request shape every server is loaded with: a JSON-RPC tools/call POST carrying what a
// Streamable HTTP client of the given protocol era sends, plus whatever the target adds (a
// credential).

export interface ToolCall {
  url: string;
  tool: string;
  arguments: Record<string, unknown>;
  /**
   * Extra request headers, e.g. `authorization`. They ride on the pre-flight and on every
   * loaded request alike, so the pre-flight proves the exact request that is then measured.
   */
  headers?: Record<string, string>;
}

export interface HttpRequestSpec {
  method: "POST";
  headers: Record<string, string>;
  body: string;
}

/** The protocol revisions every server is loaded in, one row each (issue 8). */
export const ERAS = ["2025-11-25", "2026-07-28"] as const;
export type Era = (typeof ERAS)[number];

const CLIENT_INFO = { name: "atrium-bench", version: "0.0.0" };

export function toolCallRequest(call: ToolCall, era: Era): HttpRequestSpec {
  const params: Record<string, unknown> = { name: call.tool, arguments: call.arguments };
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": era,
  };
  if (era === "2026-07-28") {
    // 2026-07-28 has no initialize: every request names its revision, capabilities and client
    // in `_meta`, and repeats its method and tool name in headers that must match the body.
    params._meta = {
      "io.modelcontextprotocol/protocolVersion": era,
      "io.modelcontextprotocol/clientCapabilities": {},
      "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
    };
    headers["mcp-method"] = "tools/call";
    headers["mcp-name"] = call.tool;
  }
  return {
    method: "POST",
    headers: { ...headers, ...call.headers },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params }),
  };
}
