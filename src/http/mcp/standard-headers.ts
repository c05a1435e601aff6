import { decodeHeaderValue } from "./header-value.ts";
import { isJsonObject } from "./json-shape.ts";

// 2026-07-28 requires every request POST to name its protocol version and method in headers, and
// tools/call, prompts/get and resources/read (and the task methods) to repeat params.name /
// params.uri / params.taskId in Mcp-Name, so intermediaries can route without reading the body.
// The SDK's classifier already refuses a version or method header that disagrees with the body;
// this is the rest: a missing header, or an Mcp-Name that disagrees (-32020, HTTP 400).

export const HEADER_MISMATCH = -32020;

/** The body field `Mcp-Name` repeats, per method (SEP-2243, and SEP-2663 for tasks). */
export const MCP_NAME_SOURCE: Readonly<Record<string, string>> = {
  "tools/call": "name",
  "prompts/get": "name",
  "resources/read": "uri",
  "tasks/get": "taskId",
  "tasks/update": "taskId",
  "tasks/cancel": "taskId",
};

export interface StandardHeaders {
  protocolVersion: string | null;
  method: string | null;
  name: string | null;
}

export interface HeaderRefusal {
  message: string;
  header: string;
}

/** Why a 2026-07-28 request's standard headers cannot be served, or undefined when they can. */
export function standardHeaderRefusal(
  headers: StandardHeaders,
  method: string,
  params: unknown,
): HeaderRefusal | undefined {
  if (headers.protocolVersion === null)
    return { header: "(missing)", message: "the required MCP-Protocol-Version header is absent" };
  if (headers.method === null)
    return {
      header: "(missing)",
      message: `the body names method ${method} but the required Mcp-Method header is absent`,
    };
  const field = Object.hasOwn(MCP_NAME_SOURCE, method) ? MCP_NAME_SOURCE[method] : undefined;
  if (field === undefined) return undefined;
  const value = isJsonObject(params) ? params[field] : undefined;
  if (typeof value !== "string") return undefined;
  if (headers.name === null)
    return {
      header: "(missing)",
      message: `the body carries params.${field}="${value}" but the required Mcp-Name header is absent`,
    };
  const named = decodeHeaderValue(headers.name.trim());
  if (named === undefined)
    return { header: headers.name, message: "the Mcp-Name header carries an invalid =?base64?…?= value" };
  if (named !== value)
    return {
      header: headers.name,
      message: `the body carries params.${field}="${value}" but the Mcp-Name header names "${named}"`,
    };
  return undefined;
}
