import { readFileSync } from "node:fs";
import type { McpServer } from "@modelcontextprotocol/server";
import * as z from "zod";

// The tools Atrium listed for the bench's workspace (names, descriptions, input schemas,
// annotations), registered on a bare SDK server so that its tools/list answers with as many
// tools of the same size. Their handlers are never called: the comparison is the listing.

interface ListedTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}

export function readListedTools(path: string): ListedTool[] {
  const tools = JSON.parse(readFileSync(path, "utf8")) as unknown;
  if (!Array.isArray(tools) || tools.length === 0) throw new Error(`${path} holds no tool definitions`);
  return tools as ListedTool[];
}

// Schemas are converted once: a server built per request converts nothing of ours on the hot path,
// only what the SDK itself does per request (registering, and writing each schema for the list).
export function toolRegistrar(tools: readonly ListedTool[]): (server: McpServer) => void {
  const prepared = tools.map((tool) => ({
    tool,
    // biome-ignore lint/suspicious/noExplicitAny: a JSON Schema object as read from the file.
    inputSchema: z.fromJSONSchema(tool.inputSchema as any) as z.ZodObject,
  }));
  return (server) => {
    for (const { tool, inputSchema } of prepared) {
      server.registerTool(
        tool.name,
        {
          ...(tool.title && { title: tool.title }),
          ...(tool.description && { description: tool.description }),
          inputSchema,
          ...(tool.annotations && { annotations: tool.annotations }),
        },
        async () => ({ content: [{ type: "text", text: "not served by the bench" }], isError: true }),
      );
    }
  };
}
