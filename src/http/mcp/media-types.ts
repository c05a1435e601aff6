import { isJsonContentType } from "@modelcontextprotocol/server";
import { jsonReply, type McpReply } from "./reply.ts";

/** The headers a POST is judged by, whatever object carries them (web `Headers`, Node's). */
export interface PostHeaders {
  get(name: string): string | null;
}

/**
 * What Streamable HTTP asks of every POST, in either era, with the SDK transport's own answers:
 * an `Accept` listing both JSON and an event stream (any answer may stream), else 406; a body
 * sent as `application/json`, else 415 — which also keeps a page on another origin from
 * posting one as a form or as text/plain without a preflight. The SDK's 2026-07-28 building
 * blocks leave both checks to their caller.
 */
export function mediaTypeRefusal(headers: PostHeaders): McpReply | undefined {
  const accept = headers.get("accept");
  if (!accept?.includes("application/json") || !accept.includes("text/event-stream")) {
    return transportError(
      406,
      "Not Acceptable: Client must accept both application/json and text/event-stream",
    );
  }
  if (!isJsonContentType(headers.get("content-type"))) {
    return transportError(415, "Unsupported Media Type: Content-Type must be application/json");
  }
  return undefined;
}

function transportError(status: number, message: string): McpReply {
  return jsonReply(status, { jsonrpc: "2.0", error: { code: -32000, message }, id: null });
}
