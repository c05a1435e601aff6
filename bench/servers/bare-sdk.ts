// Baseline (a): the MCP SDK's documented stateless pattern — `createMcpHandler` with a factory
// that builds a fresh McpServer for every request, serving both the 2025 era and 2026-07-28 —
// with one tool doing the same disk work as Atrium's files__info. Whatever Atrium costs on top
// of this is Atrium's own overhead.
//
// Mounted the way the SDK's "Serve with Hono" guide does (docs/serving/hono.md in
// modelcontextprotocol/typescript-sdk: `app.all('/mcp', (c) => handler.fetch(c.req.raw, …))`),
// on a plain `new Hono()` rather than `createMcpHonoApp()`: that helper lives in
// @modelcontextprotocol/hono, which Atrium does not install, and its JSON body parsing (a
// `clone()` and a stream read) roughly halves throughput, which would flatter Atrium.
import { serve } from "@hono/node-server";
import { createMcpHandler, McpServer } from "@modelcontextprotocol/server";
import { type Context, Hono } from "hono";
import * as z from "zod";
import { exitWithParent } from "./exit-with-parent.ts";
import { readListedTools, toolRegistrar } from "./listed-tools.ts";
import { readMetadata } from "./read-metadata.ts";
import { readServerOptions } from "./server-options.ts";

const { port, dataDir, toolsFile } = readServerOptions();
exitWithParent();

const handler = createMcpHandler(() => {
  const server = new McpServer({ name: "bench-bare-sdk", version: "0.0.0" });
  server.registerTool(
    "info",
    { description: "Metadata of one file", inputSchema: z.object({ id: z.string() }) },
    async ({ id }) => {
      const metadata = await readMetadata(dataDir, id);
      return { content: [{ type: "text", text: JSON.stringify(metadata) }], structuredContent: metadata };
    },
  );
  return server;
});

const app = new Hono();
app.get("/health", (c) => c.json({ status: "ok" }));
app.all("/mcp", (c: Context) => handler.fetch(c.req.raw));

// With --tools: the same pattern serving as many tools as Atrium lists, for the tools/list row.
if (toolsFile) {
  const register = toolRegistrar(readListedTools(toolsFile));
  const listing = createMcpHandler(() => {
    const server = new McpServer({ name: "bench-bare-sdk", version: "0.0.0" });
    register(server);
    return server;
  });
  app.all("/mcp/list", (c: Context) => listing.fetch(c.req.raw));
}

serve({ fetch: app.fetch, port, hostname: "127.0.0.1" });
