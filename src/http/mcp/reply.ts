/**
 * What the MCP endpoint answers one POST with, before it is an HTTP response of either kind: a
 * JSON body Atrium built, an empty 202, or a web `Response` the SDK built (an SSE stream, a 2026
 * answer). The hono route makes a `Response` of it (toResponse); the front door writes it to
 * Node's response without one (http/mcp-front-door.ts).
 */
export type McpReply =
  | { kind: "json"; status: number; body: unknown }
  | { kind: "accepted" }
  | { kind: "web"; response: Response };

export function jsonReply(status: number, body: unknown): McpReply {
  return { kind: "json", status, body };
}

export const ACCEPTED: McpReply = { kind: "accepted" };

/**
 * Headers about one connection, which Node's server sets itself: the SDK's SSE answer says
 * `Connection: keep-alive`, and passed on it overrode the `Connection: close` a drain had set, so
 * the client kept the connection and held a graceful stop for seconds
 * (test/integration/mcp-front-door-drain.test.ts, both routes).
 */
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  "connection",
  "keep-alive",
  "transfer-encoding",
  "upgrade",
]);

export function toResponse(reply: McpReply): Response {
  if (reply.kind === "web") {
    for (const name of HOP_BY_HOP) reply.response.headers.delete(name);
    return reply.response;
  }
  if (reply.kind === "accepted") return new Response(null, { status: 202 });
  return new Response(JSON.stringify(reply.body), {
    status: reply.status,
    headers: { "content-type": "application/json" },
  });
}
