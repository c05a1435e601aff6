import type { Era, HttpRequestSpec } from "./tool-call.ts";

// Any JSON-RPC request the bench loads, in the shape a Streamable HTTP client of the given era
// sends it. tools/call is one case (tool-call.ts); ping, tools/list, initialize and
// server/discover are the others.

export interface RpcCall {
  url: string;
  method: string;
  params?: Record<string, unknown>;
  /** Extra headers (a credential); they ride on the pre-flight and on every loaded request alike. */
  headers?: Record<string, string>;
}

const CLIENT_INFO = { name: "atrium-bench", version: "0.0.0" };

/** Methods whose 2026-07-28 request repeats a name from params in the `Mcp-Name` header. */
const NAMED: Record<string, string> = {
  "tools/call": "name",
  "prompts/get": "name",
  "resources/read": "uri",
};

export function rpcRequest(call: RpcCall, era: Era): HttpRequestSpec {
  const params: Record<string, unknown> = { ...call.params };
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": era,
  };
  if (era === "2026-07-28") {
    // 2026-07-28 has no initialize: every request names its revision, capabilities and client
    // in `_meta`, and repeats its method (and a tool's name) in headers that must match the body.
    params._meta = {
      "io.modelcontextprotocol/protocolVersion": era,
      "io.modelcontextprotocol/clientCapabilities": {},
      "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
    };
    headers["mcp-method"] = call.method;
    const nameField = NAMED[call.method];
    const name = nameField === undefined ? undefined : params[nameField];
    if (typeof name === "string") headers["mcp-name"] = name;
  } else if (call.method === "initialize") {
    // A stateless 2025 client still opens with initialize; this is what it sends.
    Object.assign(params, { protocolVersion: era, capabilities: {}, clientInfo: CLIENT_INFO });
  }
  const body: Record<string, unknown> = { jsonrpc: "2.0", id: 1, method: call.method };
  if (Object.keys(params).length > 0) body.params = params;
  return { method: "POST", headers: { ...headers, ...call.headers }, body: JSON.stringify(body) };
}

/** What a client asks first: `initialize` in the 2025 era, `server/discover` in 2026-07-28. */
export function openingMethod(era: Era): string {
  return era === "2026-07-28" ? "server/discover" : "initialize";
}
