import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CALLER_META_KEY } from "../../src/sources/caller-meta.ts";
import { McpSource } from "../../src/sources/mcp-source.ts";

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
        { principalId: "usr_x", workspaceId: "ws_x" },
      );
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent?.text).toBe("hi");
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
        { principalId: "usr_000000000000000000000001", workspaceId: "ws_0000000000000001" },
      );
      const meta = result.structuredContent?.meta as Record<string, unknown> | null;
      expect(meta?.[CALLER_META_KEY]).toBeUndefined();
      expect(JSON.stringify(result)).not.toContain("usr_000000000000000000000001");
    } finally {
      await source.close();
    }
  });
});
