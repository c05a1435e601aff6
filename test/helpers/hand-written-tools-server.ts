import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";

/** A tools server on 127.0.0.1 port 0; `url` is its MCP endpoint. */
export interface HandWrittenToolsServer {
  url: string;
  close(): void;
}

/**
 * A tools server that answers JSON-RPC by hand, as a server not built on the SDK would: it takes
 * whatever `tools()` gives at each tools/list as it is (names and titles the SDK would refuse or
 * change), answers tools/call `called <name>`, initialize as `serverName` and ping, and any other
 * method "Method not found".
 */
export async function startHandWrittenToolsServer(
  serverName: string,
  tools: () => Record<string, unknown>[],
): Promise<HandWrittenToolsServer> {
  async function answer(request: Request): Promise<Response> {
    if (request.method !== "POST") return new Response(null, { status: 405 });
    const message = (await request.json()) as {
      id?: number;
      method: string;
      params?: Record<string, unknown>;
    };
    if (message.id === undefined) return new Response(null, { status: 202 });
    const reply = (result: unknown) => Response.json({ jsonrpc: "2.0", id: message.id, result });
    switch (message.method) {
      case "initialize":
        return reply({
          protocolVersion: (message.params?.protocolVersion as string) ?? "2025-11-25",
          capabilities: { tools: {} },
          serverInfo: { name: serverName, version: "1.0.0" },
        });
      case "ping":
        return reply({});
      case "tools/list":
        return reply({ tools: tools() });
      case "tools/call":
        return reply({ content: [{ type: "text", text: `called ${String(message.params?.name)}` }] });
      default:
        return Response.json({
          jsonrpc: "2.0",
          id: message.id,
          error: { code: -32601, message: "Method not found" },
        });
    }
  }
  const http = serve({ fetch: answer, hostname: "127.0.0.1", port: 0 });
  await once(http, "listening");
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    close: () => http.close(),
  };
}

/** A tool named `name`, described after it, taking any object: what a plain listing holds. */
export function plainTool(name: string): Record<string, unknown> {
  return { name, description: `tool ${name}`, inputSchema: { type: "object" } };
}
