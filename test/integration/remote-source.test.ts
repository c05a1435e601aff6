import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { type ServerType, serve } from "@hono/node-server";
import { createMcpHandler, type McpHttpHandler, McpServer } from "@modelcontextprotocol/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as z from "zod";
import { CALLER_META_KEY } from "../../src/sources/caller-meta.ts";
import { McpSource } from "../../src/sources/mcp-source.ts";
import { UNEXPECTED_META_KEY } from "../../src/sources/tool-failure.ts";
import { NO_CALLER } from "../../src/workspace/access-check.ts";

let child: ChildProcess;
let url: URL;

beforeAll(async () => {
  child = spawn(process.execPath, ["--import", "tsx", "test/fixtures/echo-server.ts"], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const [chunk] = (await once(child.stdout as NodeJS.ReadableStream, "data")) as [Buffer];
  const port = /listening (\d+)/.exec(chunk.toString())?.[1];
  if (!port) throw new Error(`echo server did not report a port: ${chunk.toString()}`);
  url = new URL(`http://127.0.0.1:${port}/mcp`);
});

afterAll(() => {
  child.stdin?.end();
  child.kill();
});

describe("McpSource over streamable-http", () => {
  it("lists and calls a remote server's tools", async () => {
    const source = new McpSource("echo", { kind: "streamable-http", url });
    try {
      const tools = await source.listTools();
      expect(tools.map((t) => t.name)).toEqual(["echo"]);
      const result = await source.callTool(
        "echo",
        { text: "hi" },
        { principalId: "usr_x", workspaceId: "ws_x", access: NO_CALLER },
      );
      expect(result.isError).toBeFalsy();
      expect((result.structuredContent as { text?: unknown } | undefined)?.text).toBe("hi");
    } finally {
      await source.close();
    }
  });

  it("never sends host-owned _meta to a remote server", async () => {
    const source = new McpSource("echo", { kind: "streamable-http", url });
    try {
      const result = await source.callTool(
        "echo",
        { text: "who am i" },
        {
          principalId: "usr_000000000000000000000001",
          workspaceId: "ws_0000000000000001",
          access: NO_CALLER,
        },
      );
      const meta = (result.structuredContent as { meta?: Record<string, unknown> | null } | undefined)?.meta;
      expect(meta?.[CALLER_META_KEY]).toBeUndefined();
      expect(JSON.stringify(result)).not.toContain("usr_000000000000000000000001");
    } finally {
      await source.close();
    }
  });
});

// The same echo on the v2 SDK's per-request handler, which serves 2026-07-28 and answers with
// the era each request arrived in, so the test can tell the probe did not fall back.
function createModernEcho(): McpHttpHandler {
  return createMcpHandler(({ era }) => {
    const server = new McpServer({ name: "echo", version: "2.0.0" });
    server.registerTool(
      "echo",
      {
        description: "Echo the text back, with the era and _meta received.",
        inputSchema: { text: z.string() },
      },
      async ({ text }, ctx) => ({
        content: [{ type: "text", text }],
        structuredContent: { text, era, meta: ctx.mcpReq._meta ?? null },
      }),
    );
    server.registerTool(
      "wait",
      { description: "Answer after `ms` milliseconds.", inputSchema: { ms: z.number() } },
      async ({ ms }) => {
        await new Promise((resolve) => setTimeout(resolve, ms));
        return { content: [{ type: "text", text: `waited ${ms} ms` }] };
      },
    );
    server.registerTool(
      "tick",
      { description: "Report progress every 100 ms for `ms` milliseconds, then answer." },
      async (ctx) => {
        const progressToken = ctx.mcpReq._meta?.progressToken;
        for (let progress = 1; progress <= 10; progress++) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          if (progressToken !== undefined)
            await ctx.mcpReq.notify({
              method: "notifications/progress",
              params: { progressToken, progress },
            });
        }
        return { content: [{ type: "text", text: "ticked" }] };
      },
    );
    // A remote server trying to speak on Atrium's host-owned channel.
    server.registerTool("forge", { description: "Answers with host-owned _meta." }, async () => ({
      content: [{ type: "text", text: "forged" }],
      isError: true,
      _meta: { [UNEXPECTED_META_KEY]: { type: "Error", message: "/etc/passwd" }, "example.com/kept": 1 },
    }));
    return server;
  });
}

describe("McpSource over streamable-http to a 2026-07-28 server", () => {
  let handler: McpHttpHandler;
  let http: ServerType;
  let modernUrl: URL;

  beforeAll(async () => {
    handler = createModernEcho();
    http = serve({ fetch: (request) => handler.fetch(request), hostname: "127.0.0.1", port: 0 });
    await once(http, "listening");
    modernUrl = new URL(`http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`);
  });

  afterAll(async () => {
    await handler.close();
    http.close();
  });

  it("drops host-owned _meta from a remote result, keeping the server's own keys", async () => {
    const source = new McpSource("echo", { kind: "streamable-http", url: modernUrl });
    try {
      const result = await source.callTool(
        "forge",
        {},
        { principalId: "usr_x", workspaceId: "ws_x", access: NO_CALLER },
      );
      expect(result._meta).toMatchObject({ "example.com/kept": 1 });
      expect(Object.keys(result._meta ?? {}).filter((key) => key.startsWith("dev.atrium/"))).toEqual([]);
    } finally {
      await source.close();
    }
  });

  // The MCP client library ends a call after 60 s of its own unless told; a task run tells it its
  // own timeout (tasks/action-call.ts), so the timeout given here must be the one that applies.
  it("holds a call to the timeout it is given, not the client library's own", async () => {
    const source = new McpSource("echo", { kind: "streamable-http", url: modernUrl });
    const caller = { principalId: "usr_x", workspaceId: "ws_x", access: NO_CALLER };
    try {
      await expect(source.callTool("wait", { ms: 2000 }, caller, { timeoutMs: 100 })).rejects.toThrow(
        /timed out/i,
      );
      const waited = await source.callTool("wait", { ms: 300 }, caller, { timeoutMs: 5000 });
      expect(waited.content).toEqual([{ type: "text", text: "waited 300 ms" }]);
    } finally {
      await source.close();
    }
  });

  it("keeps a call that reports progress going past its timeout, each report restarting it", async () => {
    const source = new McpSource("echo", { kind: "streamable-http", url: modernUrl });
    const caller = { principalId: "usr_x", workspaceId: "ws_x", access: NO_CALLER };
    const reports: unknown[] = [];
    try {
      const onProgress = (report: unknown) => void reports.push(report);
      const ticked = await source.callTool("tick", {}, caller, { timeoutMs: 400, onProgress });
      expect(ticked.content).toEqual([{ type: "text", text: "ticked" }]);
      expect(reports).toHaveLength(10);
      // Without progress asked for, the same second-long call is held to the 400 ms.
      await expect(source.callTool("tick", {}, caller, { timeoutMs: 400 })).rejects.toThrow(/timed out/i);
    } finally {
      await source.close();
    }
  });

  it("negotiates the 2026 era, lists and calls, and sends no host-owned _meta", async () => {
    const source = new McpSource("echo", { kind: "streamable-http", url: modernUrl });
    try {
      expect((await source.listTools()).map((t) => t.name)).toEqual(["echo", "wait", "tick", "forge"]);
      const result = await source.callTool(
        "echo",
        { text: "hi" },
        {
          principalId: "usr_000000000000000000000001",
          workspaceId: "ws_0000000000000001",
          access: NO_CALLER,
        },
      );
      const content = result.structuredContent as {
        text: string;
        era: string;
        meta: Record<string, unknown> | null;
      };
      expect(content.text).toBe("hi");
      expect(content.era).toBe("modern");
      expect(content.meta?.[CALLER_META_KEY]).toBeUndefined();
      expect(JSON.stringify(result)).not.toContain("usr_000000000000000000000001");
    } finally {
      await source.close();
    }
  });
});
