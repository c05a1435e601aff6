// The one request shape every server is loaded with: a JSON-RPC tools/call POST carrying the
// headers a Streamable HTTP client sends, plus whatever the target adds (a credential).

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

export const PROTOCOL_VERSION = "2025-11-25";

export function toolCallRequest(call: ToolCall): HttpRequestSpec {
  return {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": PROTOCOL_VERSION,
      ...call.headers,
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: call.tool, arguments: call.arguments },
    }),
  };
}
