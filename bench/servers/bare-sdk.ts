// Baseline (a): the MCP SDK's documented stateless Hono pattern — a fresh McpServer and transport per
// request — with one tool doing the same disk work as Atrium's files__info. Whatever Atrium costs on
// top of this is Atrium's own overhead.
import { serve } from "@hono/node-server";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { Hono } from "hono";
import { z } from "zod";
import { exitWithParent } from "./exit-with-parent.ts";
import { readMetadata } from "./read-metadata.ts";
import { readServerOptions } from "./server-options.ts";

const { port, dataDir } = readServerOptions();
exitWithParent();

function buildMcpServer(): McpServer {
  const server = new McpServer({ name: "bench-bare-sdk", version: "0.0.0" });
  server.registerTool(
    "info",
    { description: "Metadata of one file", inputSchema: { id: z.string() } },
    async ({ id }) => {
      const metadata = await readMetadata(dataDir, id);
      return { content: [{ type: "text", text: JSON.stringify(metadata) }], structuredContent: metadata };
    },
  );
  return server;
}

const app = new Hono();
app.get("/health", (c) => c.json({ status: "ok" }));
app.post("/mcp", async (c) => {
  const server = buildMcpServer();
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  await server.connect(transport);
  return transport.handleRequest(c.req.raw);
});

serve({ fetch: app.fetch, port, hostname: "127.0.0.1" });
