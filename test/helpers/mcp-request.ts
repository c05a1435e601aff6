// Atrium's own table of the body field Mcp-Name mirrors; mcp-request.test.ts checks these requests
// against the SDK's createMcpHandler, an oracle independent of it.

import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  type ClientCapabilities,
  type Implementation,
  PROTOCOL_VERSION_META_KEY,
} from "@modelcontextprotocol/client";
import { MCP_NAME_SOURCE } from "../../src/http/mcp/standard-headers.ts";
import { MCP_POST_HEADERS } from "./atrium.ts";
import type { McpEra } from "./mcp-eras.ts";

/**
 * A JSON-RPC request (with `id`) or notification (without), as a test posts it to `/mcp/ws_…`.
 * A type, not an interface, so it is a REST body (`Record<string, unknown>`) as it stands.
 */
export type JsonRpcMessage = {
  jsonrpc: "2.0";
  id?: number | string;
  method: string;
  params?: Record<string, unknown>;
};

/**
 * One POST to `/mcp/ws_…`. Header names are lower-case, so an override spread after them
 * (`{ ...request.headers, "mcp-method": "tools/list" }`) replaces one instead of doubling it.
 */
export interface McpHttpRequest {
  headers: Record<string, string>;
  body: JsonRpcMessage;
}

export interface ModernRequestOptions {
  clientInfo?: Implementation;
  capabilities?: ClientCapabilities;
}

const MODERN_ERA = "2026-07-28";
const TEST_CLIENT_INFO: Implementation = { name: "atrium-raw-test", version: "0.0.0" };

const BASE64_SENTINEL_PREFIX = "=?base64?";
const BASE64_SENTINEL_SUFFIX = "?=";

/**
 * A value as an `Mcp-Name` (or `Mcp-Param-*`) header carries it: plain when it is a safe ASCII
 * field value, else `=?base64?<utf-8 base64>?=` — the SDK client's rule (its encodeMcpParamValue,
 * not exported): empty, padded with whitespace, non-printable or non-ASCII, or already
 * sentinel-shaped values are wrapped.
 */
export function encodeMcpHeaderValue(value: string): string {
  const sentinelShaped = value.startsWith(BASE64_SENTINEL_PREFIX) && value.endsWith(BASE64_SENTINEL_SUFFIX);
  const plain =
    value.length > 0 &&
    !sentinelShaped &&
    value === value.trim() &&
    [...value].every((char) => char === "\t" || (char >= " " && char <= "~"));
  if (plain) return value;
  return `${BASE64_SENTINEL_PREFIX}${Buffer.from(value, "utf8").toString("base64")}${BASE64_SENTINEL_SUFFIX}`;
}

/**
 * `message` as a valid 2026-07-28 request: the `_meta` envelope (protocol version, client
 * capabilities, client info) merged under the message's own `_meta`, and the headers the SDK's
 * 2026 leg requires of a request — `mcp-protocol-version`, `mcp-method`, and `mcp-name` for the
 * methods whose body names a tool, prompt, resource or task. A notification gets the version
 * header only, as the SDK client sends it.
 */
export function modernMcpRequest(
  message: JsonRpcMessage,
  options: ModernRequestOptions = {},
): McpHttpRequest {
  const params = message.params ?? {};
  const ownMeta = (params._meta ?? {}) as Record<string, unknown>;
  const body: JsonRpcMessage = {
    ...message,
    params: {
      ...params,
      _meta: {
        [PROTOCOL_VERSION_META_KEY]: MODERN_ERA,
        [CLIENT_CAPABILITIES_META_KEY]: options.capabilities ?? {},
        [CLIENT_INFO_META_KEY]: options.clientInfo ?? TEST_CLIENT_INFO,
        ...ownMeta,
      },
    },
  };
  const headers: Record<string, string> = { ...MCP_POST_HEADERS, "mcp-protocol-version": MODERN_ERA };
  if (message.id === undefined) return { headers, body };
  headers["mcp-method"] = message.method;
  const field = MCP_NAME_SOURCE[message.method];
  const name = field === undefined ? undefined : params[field];
  if (typeof name === "string") headers["mcp-name"] = encodeMcpHeaderValue(name);
  return { headers, body };
}

/**
 * `message` as a client in `era` posts it: unchanged with the Streamable HTTP headers for
 * 2025-11-25 (no version header, as the raw tests have always sent it), enveloped for 2026-07-28.
 */
export function mcpRequest(era: McpEra, message: JsonRpcMessage): McpHttpRequest {
  return era === MODERN_ERA ? modernMcpRequest(message) : { headers: { ...MCP_POST_HEADERS }, body: message };
}

/**
 * The JSON-RPC message answering one POSTed request: the JSON body, or the last message of a
 * `text/event-stream` body (the Streamable HTTP server may stream any response, and sends the
 * response after the request's notifications). A JSON-RPC error is returned, not thrown.
 */
export async function readMcpMessage(response: Response): Promise<Record<string, unknown>> {
  const text = await response.text();
  const streamed = response.headers.get("content-type")?.startsWith("text/event-stream") ?? false;
  const data = streamed
    ? text
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice("data:".length))
        .at(-1)
    : text;
  if (data === undefined || data.trim() === "") {
    throw new Error(
      `HTTP ${response.status} carried no JSON-RPC message: ${JSON.stringify(text.slice(0, 200))}`,
    );
  }
  return JSON.parse(data) as Record<string, unknown>;
}
