// Ceiling (b): one hono route doing the same disk read and answering in the same JSON-RPC shape,
// with no MCP machinery at all — the most a single Node process can do for this request.
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { exitWithParent } from "./exit-with-parent.ts";
import { readMetadata } from "./read-metadata.ts";
import { readServerOptions } from "./server-options.ts";

const { port, dataDir } = readServerOptions();
exitWithParent();

interface ToolCallBody {
  id?: unknown;
  params?: { arguments?: { id?: unknown } };
}

const app = new Hono();
app.get("/health", (c) => c.json({ status: "ok" }));
app.post("/mcp", async (c) => {
  const body = await c.req.json<ToolCallBody>();
  const id = body.params?.arguments?.id;
  if (typeof id !== "string") return c.json({ error: "params.arguments.id must be a string" }, 400);
  const metadata = await readMetadata(dataDir, id);
  // Same response shape as an MCP tool result, so the bench verifies every server the same way.
  return c.json({
    jsonrpc: "2.0",
    id: body.id ?? null,
    result: { content: [{ type: "text", text: JSON.stringify(metadata) }], structuredContent: metadata },
  });
});

// The ceiling for ping: a real JSON-RPC answer, parsed from and written as JSON, and nothing else.
app.post("/ping", async (c) => {
  const body = await c.req.json<{ id?: unknown }>();
  return c.json({ jsonrpc: "2.0", id: body.id ?? null, result: {} });
});

serve({ fetch: app.fetch, port, hostname: "127.0.0.1" });
