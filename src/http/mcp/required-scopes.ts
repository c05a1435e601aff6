import type { Tool } from "@modelcontextprotocol/server";
import { SCOPE_READ, scopeForTool } from "../../oauth/scopes.ts";

/** A tools/call in a body, and the scope calling that tool needs. */
export interface ScopedCall {
  tool: string;
  scope: string;
}

/**
 * The scopes a JSON-RPC body needs, decided before the MCP transport sees it so a client
 * gets an HTTP 403 it can step up from: `mcp:read` for anything, and for each tool call the
 * scope its tool needs (scopedCalls).
 */
export function requiredScopes(calls: readonly ScopedCall[]): string[] {
  return [...new Set([SCOPE_READ, ...calls.map((call) => call.scope)])];
}

/**
 * Each tools/call of a body (one message or a batch), with the scope its tool needs: `mcp:read`
 * for a tool its source marks read-only, `mcp:write` for any other (unknown ones too).
 */
export async function scopedCalls(
  body: unknown,
  findTool: (name: string) => Promise<Tool | undefined>,
): Promise<ScopedCall[]> {
  const messages = Array.isArray(body) ? body : [body];
  const calls: ScopedCall[] = [];
  for (const message of messages) {
    if (!isToolCall(message)) continue;
    const tool = message.params.name;
    calls.push({ tool, scope: scopeForTool(await findTool(tool)) });
  }
  return calls;
}

function isToolCall(message: unknown): message is { params: { name: string } } {
  if (typeof message !== "object" || message === null) return false;
  const { method, params } = message as { method?: unknown; params?: { name?: unknown } };
  return method === "tools/call" && typeof params?.name === "string";
}
