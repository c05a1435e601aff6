import { Client } from "@modelcontextprotocol/client";
import { McpServer } from "@modelcontextprotocol/server";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import * as z from "zod";
import { CALLER_META_KEY, type Caller } from "../../../src/sources/caller-meta.ts";
import { McpSource } from "../../../src/sources/mcp-source.ts";
import { NO_CALLER } from "../../../src/workspace/access-check.ts";

const CALLER: Caller = {
  principalId: "usr_0123456789abcdef01234567",
  workspaceId: "ws_0123456789abcdef",
  access: NO_CALLER,
};

/** A real server with one tool that keeps its output schema and one that breaks it. */
function createInfoServer(seenMeta: unknown[]): McpServer {
  const server = new McpServer({ name: "info", version: "1.0.0" });
  const outputSchema = z.object({ id: z.string(), size: z.number() });
  server.registerTool(
    "info",
    { description: "A file's size.", inputSchema: z.object({ id: z.string() }), outputSchema },
    async ({ id }, ctx) => {
      seenMeta.push(ctx.mcpReq._meta);
      return { content: [{ type: "text", text: id }], structuredContent: { id, size: 5 } };
    },
  );
  server.registerTool(
    "broken",
    { description: "Answers outside its output schema.", outputSchema },
    async () => ({ content: [{ type: "text", text: "?" }], structuredContent: { id: 7 } }),
  );
  return server;
}

let seenMeta: unknown[];
let source: McpSource;

beforeEach(() => {
  seenMeta = [];
  source = new McpSource("files", { kind: "in-memory", createServer: () => createInfoServer(seenMeta) });
});

afterEach(async () => {
  vi.restoreAllMocks();
  await source.close();
});

describe("McpSource on the in-memory arm", () => {
  it("returns the server's validated result and does not check it again through Client.callTool", async () => {
    // Client.callTool re-parses every result and looks up an output validator per call; on the
    // in-memory arm the server has already done both (docs/performance.md, "the in-memory hop").
    const callTool = vi.spyOn(Client.prototype, "callTool");
    const result = await source.callTool("info", { id: "fl_1" }, CALLER);
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ id: "fl_1", size: 5 });
    expect(seenMeta).toEqual([expect.objectContaining({ [CALLER_META_KEY]: CALLER })]);
    expect(callTool).not.toHaveBeenCalled();
  });

  it("still refuses a result outside the tool's output schema: the server checks it", async () => {
    const result = await source.callTool("broken", {}, CALLER);
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toMatch(/output/i);
  });

  it("still refuses arguments outside the tool's input schema", async () => {
    const result = await source.callTool("info", { id: 42 }, CALLER);
    expect(result.isError).toBe(true);
    expect(seenMeta).toEqual([]);
  });
});
