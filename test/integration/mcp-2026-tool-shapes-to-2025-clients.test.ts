import { rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { type ServerType, serve } from "@hono/node-server";
import { createMcpHandler, Server } from "@modelcontextprotocol/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, capturingLogger, MCP_POST_HEADERS, type TestAtrium } from "../helpers/atrium.ts";
import { startConnectionsAtrium } from "../helpers/connections-atrium.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { modernMcpRequest } from "../helpers/mcp-request.ts";

// 2026-07-28 loosened what a tool may say (SEP-2106): `outputSchema` is any JSON Schema (an
// array, an anyOf…) and `structuredContent` any JSON value; the 2025 revisions want objects. One
// workspace URL serves both eras (adr/0029), and a connected server that speaks 2026 is
// photographed in 2026 shapes. A 2025-era client is given its tools as the SDK's 2025 codec wraps
// them ({result: …}) and its calls' results wrapped by the same rule (src/http/mcp/call-result.ts):
// relayed as they came, the SDK's result check refused them with -32602 and zod's words.

const time = new FakeTime(Date.now());
const captured = capturingLogger();
let instance: TestAtrium;
let ws: string;
let remote: ServerType;

const MAYBE_PAIR = {
  anyOf: [{ type: "object", properties: { a: { type: "integer" } }, required: ["a"] }, { type: "null" }],
};

function buildRemote(): Server {
  const server = new Server({ name: "numbers", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler("tools/list", () => ({
    tools: [
      {
        name: "primes",
        description: "The first primes.",
        inputSchema: { type: "object", properties: {}, additionalProperties: false },
        outputSchema: { type: "array", items: { type: "integer" } },
      },
      {
        name: "pair",
        description: "A pair, or nothing.",
        inputSchema: { type: "object", properties: {}, additionalProperties: false },
        outputSchema: MAYBE_PAIR,
      },
    ],
  }));
  server.setRequestHandler("tools/call", (request) =>
    request.params.name === "primes"
      ? { content: [{ type: "text", text: "[2,3,5]" }], structuredContent: [2, 3, 5] }
      : { content: [{ type: "text", text: '{"a":1}' }], structuredContent: { a: 1 } },
  );
  return server;
}

beforeAll(async () => {
  const handler = createMcpHandler(buildRemote, { legacy: "reject" });
  const url = await new Promise<URL>((resolve) => {
    remote = serve({ fetch: (request) => handler.fetch(request), port: 0, hostname: "127.0.0.1" }, (info) =>
      resolve(new URL(`http://127.0.0.1:${(info as AddressInfo).port}/mcp`)),
    );
  });
  instance = await startConnectionsAtrium("tool-shapes", time, captured.log);
  ws = await bootstrapWorkspace(instance, "alice");
  const added = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/connections`, {
    name: "numbers",
    url: url.href,
    auth: { kind: "none" },
  });
  expect(added.status, await added.clone().text()).toBe(201);
}, 60_000);

afterAll(async () => {
  await instance?.stop();
  if (instance) await rm(instance.dir, { recursive: true, force: true });
  await new Promise((resolve) => remote?.close(resolve));
});

interface Listed {
  name: string;
  outputSchema?: unknown;
}

/** What these tests read of a JSON-RPC answer. */
interface Answer {
  result: { tools: Listed[]; structuredContent?: unknown; _meta?: Record<string, unknown> };
  error?: unknown;
}

async function legacy(body: unknown): Promise<Answer> {
  const response = await instance.raw("alice", "POST", `/mcp/${ws}`, {
    headers: { ...MCP_POST_HEADERS, "mcp-protocol-version": "2025-11-25" },
    body: JSON.stringify(body),
  });
  return JSON.parse(response.text) as Answer;
}

async function modern(body: {
  jsonrpc: "2.0";
  id: number;
  method: string;
  params?: Record<string, unknown>;
}) {
  const request = modernMcpRequest(body);
  const response = await instance.raw("alice", "POST", `/mcp/${ws}`, {
    headers: request.headers,
    body: JSON.stringify(request.body),
  });
  return JSON.parse(response.text) as Answer;
}

function call(id: number, tool: string) {
  return { jsonrpc: "2.0" as const, id, method: "tools/call", params: { name: tool, arguments: {} } };
}

describe("a connected 2026 server's tool as 2025-era clients are given it", () => {
  it("tools/list wraps a non-object outputSchema as {result: …}, an anyOf root too", async () => {
    const listed = await legacy({ jsonrpc: "2.0", id: 1, method: "tools/list" });
    const tools = listed.result.tools;
    expect(tools.find((t) => t.name === "numbers__primes")?.outputSchema).toEqual({
      type: "object",
      properties: { result: { type: "array", items: { type: "integer" } } },
      required: ["result"],
    });
    expect(tools.find((t) => t.name === "numbers__pair")?.outputSchema).toEqual({
      type: "object",
      properties: { result: MAYBE_PAIR },
      required: ["result"],
    });
  });

  it("tools/call answers the structuredContent the listing promised, {result: [2,3,5]}", async () => {
    const answer = await legacy(call(2, "numbers__primes"));
    expect(answer.error, JSON.stringify(answer.error)).toBeUndefined();
    expect(answer.result.structuredContent).toEqual({ result: [2, 3, 5] });
  });

  it("an object value under an anyOf-rooted schema is wrapped as its listing is, {result: {a: 1}}", async () => {
    const answer = await legacy(call(3, "numbers__pair"));
    expect(answer.error, JSON.stringify(answer.error)).toBeUndefined();
    expect(answer.result.structuredContent).toEqual({ result: { a: 1 } });
  });

  it("the SDK's own 2025-era client calls both tools, its result checked against the listing", async () => {
    const client = await instance.mcpClient("alice", ws, { era: "2025-11-25" });
    await client.listTools();
    const primes = await client.callTool({ name: "numbers__primes", arguments: {} });
    expect(primes.isError ?? false).toBe(false);
    expect(primes.structuredContent).toEqual({ result: [2, 3, 5] });
    const pair = await client.callTool({ name: "numbers__pair", arguments: {} });
    expect(pair.structuredContent).toEqual({ result: { a: 1 } });
  });

  it("a 2026 client is given the natural shapes, unwrapped", async () => {
    const listed = await modern({ jsonrpc: "2.0", id: 4, method: "tools/list" });
    const tools = listed.result.tools;
    expect(tools.find((t) => t.name === "numbers__pair")?.outputSchema).toEqual(MAYBE_PAIR);
    const answer = await modern(call(5, "numbers__primes"));
    expect(answer.result.structuredContent).toEqual([2, 3, 5]);
  });
});

// The connected server's result `_meta` says who answered it (`io.modelcontextprotocol/serverInfo`)
// and may carry any other key under a prefix MCP reserves: that hop's protocol metadata, not the
// remote's to say in Atrium's answer (src/sources/relayed-meta.ts). Its own keys are relayed.
describe("a connected server's reserved result _meta", () => {
  it("a 2026 tools/call answer names Atrium as its server, not the connected server", async () => {
    const answer = await modern(call(6, "numbers__primes"));
    expect(answer.result._meta?.["io.modelcontextprotocol/serverInfo"]).toEqual({
      name: "atrium",
      version: expect.any(String),
    });
  });

  it("a 2025-era answer carries none of the connected server's reserved keys", async () => {
    const answer = await legacy(call(7, "numbers__primes"));
    expect(Object.keys(answer.result._meta ?? {})).toEqual([]);
  });
});
