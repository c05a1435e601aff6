import { type ClientRequest, request as httpRequest, type IncomingMessage } from "node:http";
import { McpServer } from "@modelcontextprotocol/server";
import * as z from "zod";
import type { PlatformApp } from "../../src/platform/app.ts";
import { AppTools } from "../../src/platform/app-tools.ts";
import { platformInput } from "../../src/platform/platform-tool.ts";
import { McpSource } from "../../src/sources/mcp-source.ts";
import { TEST_USER_HEADER, type TestAtrium } from "./atrium.ts";
import type { McpEra } from "./mcp-eras.ts";
import { mcpRequest } from "./mcp-request.ts";

/**
 * Tool calls that wait, each under a tag, until the test releases them or their signal aborts,
 * so a test acts while a call is in flight and nothing waits on time. `app` serves `slow__wait`
 * (a platform tool, which reports progress first so a caller asking for it gets a stream) and
 * `remote__wait` (a remote server's, reached through McpSource), both holding this way.
 */
export class HeldCalls {
  /** The tags whose call saw its signal abort, in order. */
  readonly cancelled: string[] = [];
  private readonly started = new Map<string, () => void>();
  private readonly releases = new Map<string, () => void>();

  /** Resolves once the call tagged `tag` is running in its tool. */
  running(tag: string): Promise<void> {
    return new Promise<void>((resolve) => this.started.set(tag, resolve));
  }

  /** Lets the call tagged `tag` answer `released`. */
  release(tag: string): void {
    this.releases.get(tag)?.();
  }

  releaseAll(): void {
    for (const release of this.releases.values()) release();
  }

  readonly app: PlatformApp = {
    name: "slow",
    start: () => {
      const tools = new AppTools("slow");
      tools.registerTool(
        "wait",
        {
          description: "Wait until cancelled or released.",
          inputSchema: platformInput({ tag: z.string() }),
          annotations: { readOnlyHint: true },
        },
        async (_caller, args: { tag: string }, call) => {
          await call.progress?.({ progress: 1, total: 2 });
          return { content: [{ type: "text", text: await this.hold(args.tag, call.signal) }] };
        },
      );
      const remote = () => {
        const server = new McpServer({ name: "remote", version: "1.0.0" });
        server.registerTool("wait", { inputSchema: { tag: z.string() } }, async ({ tag }, ctx) => ({
          content: [{ type: "text", text: await this.hold(tag, ctx.mcpReq.signal) }],
        }));
        return server;
      };
      return {
        tools,
        sources: async () => [new McpSource("remote", { kind: "in-memory", createServer: remote })],
      };
    },
  };

  private hold(tag: string, signal: AbortSignal | undefined): Promise<string> {
    this.started.get(tag)?.();
    return new Promise((resolve) => {
      this.releases.set(tag, () => resolve("released"));
      signal?.addEventListener("abort", () => {
        this.cancelled.push(tag);
        resolve("cancelled");
      });
    });
  }
}

/** A tools/call of `tool` with argument `tag` as `era` posts it, asking for progress when `streamed`. */
export function heldCall(era: McpEra, id: number | string, tool: string, tag: string, streamed = false) {
  const params: Record<string, unknown> = { name: tool, arguments: { tag } };
  if (streamed) params._meta = { progressToken: `p-${tag}` };
  return mcpRequest(era, { jsonrpc: "2.0", id, method: "tools/call", params });
}

export interface Posted {
  request: ClientRequest;
  /** The answer's status and whole body; rejects if the request is destroyed first. */
  answer: Promise<{ status: number; text: string; requestId: string }>;
}

/** POSTs `body` with `headers` as `user`, keeping hold of the request so a test can drop it. */
export function postHeld(
  instance: TestAtrium,
  user: string,
  path: string,
  headers: Record<string, string>,
  body: unknown,
): Posted {
  let request: ClientRequest | undefined;
  const answer = new Promise<{ status: number; text: string; requestId: string }>((resolve, reject) => {
    request = httpRequest(
      new URL(path, instance.url),
      { method: "POST", headers: { ...headers, [TEST_USER_HEADER]: user } },
      (response: IncomingMessage) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () =>
          resolve({
            status: response.statusCode ?? 0,
            text: Buffer.concat(chunks).toString(),
            requestId: String(response.headers["x-request-id"]),
          }),
        );
        response.on("error", reject);
      },
    );
    request.on("error", reject);
    request.end(JSON.stringify(body));
  });
  return { request: request as ClientRequest, answer };
}

/** The path of `ws`'s MCP URL that the hono route serves (an escape in it), not the front door. */
export function honoMcpPath(ws: string): string {
  return `/mcp/${ws.replace("ws_", "ws%5F")}`;
}
