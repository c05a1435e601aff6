import { rpcRequest } from "./rpc-request.ts";

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

export function toolCallRequest(call: ToolCall, era: Era): HttpRequestSpec {
  const params = { name: call.tool, arguments: call.arguments };
  return rpcRequest({ url: call.url, method: "tools/call", params, headers: call.headers }, era);
}
