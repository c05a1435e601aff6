import { type ClientRequest, request as httpRequest, type IncomingMessage } from "node:http";
import { McpServer } from "@modelcontextprotocol/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as z from "zod";
import type { PlatformApp } from "../../src/platform/app.ts";
import { AppTools } from "../../src/platform/app-tools.ts";
import { PLATFORM_APPS } from "../../src/platform/index.ts";
import { platformInput } from "../../src/platform/platform-tool.ts";
import { McpSource } from "../../src/sources/mcp-source.ts";
import {
  bootstrapWorkspace,
  capturingLogger,
  startTestAtrium,
  TEST_USER_HEADER,
  type TestAtrium,
} from "../helpers/atrium.ts";
import { MCP_ERAS, type McpEra } from "../helpers/mcp-eras.ts";
import { mcpRequest } from "../helpers/mcp-request.ts";

// A tool call can be stopped, in both eras: when its client closes the connection before the
// answer, or sends notifications/cancelled naming it, the tool's signal aborts and a remote
// server is sent notifications/cancelled by its SDK client. Only the caller who sent a request
// can cancel it (adr/0065). Each tool here waits until it is cancelled or released, so nothing
// waits on time.

/** Calls by tag: who waits for one to start, how to release one, which ones were cancelled. */
const started = new Map<string, () => void>();
const released = new Map<string, () => void>();
const cancelled: string[] = [];

/** Resolves once the call tagged `tag` is running in its tool. */
function expectCall(tag: string): Promise<void> {
  return new Promise<void>((resolve) => started.set(tag, resolve));
}

/** Waits until `signal` aborts (recording the tag) or the test releases `tag`. */
function hold(tag: string, signal: AbortSignal | undefined): Promise<string> {
  started.get(tag)?.();
  return new Promise((resolve) => {
    released.set(tag, () => resolve("released"));
    signal?.addEventListener("abort", () => {
      cancelled.push(tag);
      resolve("cancelled");
    });
  });
}

/** A remote server's tool, reached through McpSource, that holds the call the same way. */
function remoteServer(): McpServer {
  const server = new McpServer({ name: "remote", version: "1.0.0" });
  server.registerTool("wait", { inputSchema: { tag: z.string() } }, async ({ tag }, ctx) => ({
    content: [{ type: "text", text: await hold(tag, ctx.mcpReq.signal) }],
  }));
  return server;
}

const slowApp: PlatformApp = {
  name: "slow",
  start() {
    const tools = new AppTools("slow");
    tools.registerTool(
      "wait",
      {
        description: "Wait until cancelled or released.",
        inputSchema: platformInput({ tag: z.string() }),
        annotations: { readOnlyHint: true },
      },
      async (_caller, args: { tag: string }, call) => {
        // A report first, so a caller that asked for progress is answered with a stream.
        await call.progress?.({ progress: 1, total: 2 });
        return { content: [{ type: "text", text: await hold(args.tag, call.signal) }] };
      },
    );
    return {
      tools,
      sources: async () => [new McpSource("remote", { kind: "in-memory", createServer: remoteServer })],
    };
  },
};

const captured = capturingLogger();
let instance: TestAtrium;
let ws: string;

beforeAll(async () => {
  instance = await startTestAtrium({ apps: [...PLATFORM_APPS, slowApp], log: captured.log });
  ws = await bootstrapWorkspace(instance, "alice");
  const bob = (await (await instance.rest("bob", "GET", "/v1/bootstrap")).json()) as {
    principal: { id: string };
  };
  const invited = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/invitations`, {
    principalId: bob.principal.id,
  });
  const { invitation } = (await invited.json()) as { invitation: { id: string } };
  expect((await instance.rest("bob", "POST", `/v1/invitations/${invitation.id}/accept`)).status).toBe(200);
});

afterAll(async () => {
  for (const release of released.values()) release();
  await instance?.stop();
});

interface Posted {
  request: ClientRequest;
  /** The answer's status and body; rejects if the request is destroyed first. */
  answer: Promise<{ status: number; text: string; requestId: string }>;
}

/** POSTs `body` with `headers` as `user`, keeping hold of the request so a test can drop it. */
function postHeld(user: string, path: string, headers: Record<string, string>, body: unknown): Posted {
  const url = new URL(path, instance.url);
  let request: ClientRequest | undefined;
  const answer = new Promise<{ status: number; text: string; requestId: string }>((resolve, reject) => {
    request = httpRequest(
      url,
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

/** A tools/call of `tool` as `era` posts it, asking for progress when `streamed`. */
function call(era: McpEra, id: number | string, tool: string, tag: string, streamed = false) {
  const params: Record<string, unknown> = { name: tool, arguments: { tag } };
  if (streamed) params._meta = { progressToken: `p-${tag}` };
  return mcpRequest(era, { jsonrpc: "2.0", id, method: "tools/call", params });
}

function cancelNotification(era: McpEra, requestId: number | string) {
  return mcpRequest(era, {
    jsonrpc: "2.0",
    method: "notifications/cancelled",
    params: { requestId, reason: "no longer needed" },
  });
}

/** How many requests the log says their client left before the answer (status 499). */
function clientsGone(): number {
  return captured.lines.filter((line) => line.msg === "request" && line.status === 499).length;
}

describe.each(MCP_ERAS)("stopping a tool call (%s)", (era) => {
  it.each([
    ["a platform tool, answered with JSON", "slow__wait", false, false],
    ["a platform tool, answered with a stream", "slow__wait", true, false],
    ["a remote server's tool", "remote__wait", false, false],
    ["a call on the hono route (an escaped path)", "slow__wait", false, true],
  ] as const)("a client that closes the connection cancels %s", async (_what, tool, streamed, hono) => {
    const tag = `dropped-${era}-${tool}-${streamed}-${hono}`;
    const running = expectCall(tag);
    const { headers, body } = call(era, 1, tool, tag, streamed);
    const path = hono ? `/mcp/${ws.replace("ws_", "ws%5F")}` : `/mcp/${ws}`;
    const posted = postHeld("alice", path, headers, body);
    posted.answer.catch(() => {});
    await running;
    const gone = clientsGone();
    posted.request.destroy();
    await expect.poll(() => cancelled.includes(tag)).toBe(true);
    // The front door logs a JSON answer it never began as 499; a stream had begun as a 200.
    if (!streamed && !hono) await expect.poll(clientsGone).toBe(gone + 1);
  });

  it("notifications/cancelled from the caller cancels their call, whose POST ends with nothing", async () => {
    const tag = `notified-${era}`;
    const running = expectCall(tag);
    const { headers, body } = call(era, "c-1", "slow__wait", tag);
    const posted = postHeld("alice", `/mcp/${ws}`, headers, body);
    await running;
    const notice = cancelNotification(era, "c-1");
    const sent = await instance.raw("alice", "POST", `/mcp/${ws}`, {
      headers: notice.headers,
      body: JSON.stringify(notice.body),
    });
    expect(sent.status).toBe(202);
    expect(await posted.answer).toMatchObject({ status: 202, text: "" });
    expect(cancelled).toContain(tag);
  });

  // 2026-07-28 has no batches.
  it.skipIf(era === "2026-07-28")(
    "a batch whose one request is cancelled is answered with the others",
    async () => {
      const tag = `batched-${era}`;
      const running = expectCall(tag);
      const { headers, body: slow } = call(era, "b-1", "slow__wait", tag);
      const ping = { jsonrpc: "2.0", id: "b-2", method: "ping" };
      const posted = postHeld("alice", `/mcp/${ws}`, headers, [slow, ping]);
      await running;
      const notice = cancelNotification(era, "b-1");
      await instance.raw("alice", "POST", `/mcp/${ws}`, {
        headers: notice.headers,
        body: JSON.stringify(notice.body),
      });
      const answer = await posted.answer;
      expect(JSON.parse(answer.text)).toEqual([{ jsonrpc: "2.0", id: "b-2", result: {} }]);
      expect(cancelled).toContain(tag);
    },
  );

  it("nobody else can cancel a call: not another member, not the caller from another workspace", async () => {
    const tag = `kept-${era}`;
    const running = expectCall(tag);
    const { headers, body } = call(era, 7, "slow__wait", tag);
    const posted = postHeld("alice", `/mcp/${ws}`, headers, body);
    await running;
    const notice = cancelNotification(era, 7);
    const bobs = await instance.raw("bob", "POST", `/mcp/${ws}`, {
      headers: notice.headers,
      body: JSON.stringify(notice.body),
    });
    const otherWorkspace = await instance.rest("alice", "POST", "/v1/workspaces", { name: `other ${era}` });
    const other = ((await otherWorkspace.json()) as { id: string }).id;
    const elsewhere = await instance.raw("alice", "POST", `/mcp/${other}`, {
      headers: notice.headers,
      body: JSON.stringify(notice.body),
    });
    expect([bobs.status, elsewhere.status]).toEqual([202, 202]);
    released.get(tag)?.();
    const answer = await posted.answer;
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.text)).toMatchObject({ id: 7, result: { content: [{ text: "released" }] } });
    expect(cancelled).not.toContain(tag);
  });
});
