import type { Tool } from "@modelcontextprotocol/server";
import { SCOPE_READ, scopeForTool } from "../../oauth/scopes.ts";

/**
 * The scopes a JSON-RPC body needs, decided before the MCP transport sees it so a client
 * gets an HTTP 403 it can step up from. Calling a tool its source marks read-only needs
 * `mcp:read`; any other tool (unknown ones too) needs `mcp:write`; every other method
 * (initialize, listing, reading resources, ping) needs `mcp:read`.
 */
export async function requiredScopes(
  body: unknown,
  findTool: (name: string) => Promise<Tool | undefined>,
): Promise<string[]> {
  const messages = Array.isArray(body) ? body : [body];
  const required = new Set<string>([SCOPE_READ]);
  for (const message of messages) {
    if (!isToolCall(message)) continue;
    required.add(scopeForTool(await findTool(message.params.name)));
  }
  return [...required];
}

function isToolCall(message: unknown): message is { params: { name: string } } {
  if (typeof message !== "object" || message === null) return false;
  const { method, params } = message as { method?: unknown; params?: { name?: unknown } };
  return method === "tools/call" && typeof params?.name === "string";
}
