import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { type ServerType, serve } from "@hono/node-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, capturingLogger, type TestAtrium } from "../helpers/atrium.ts";
import { startConnectionsAtrium } from "../helpers/connections-atrium.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { type RemoteServer, startRemoteServer } from "../helpers/remote-server.ts";

// A connection's tool names as its server gives them and as a member calls them: a name shaped
// like an object's own property, holding `__`, or differing only in case is listed and called as
// itself; a call under a name no server could list (too long, an invisible character, a line
// break) is a tool error, never an unexpected failure. The odd names come from a hand-written
// JSON-RPC server, as a server not built on the SDK would answer.

const NAMES = [
  "__proto__",
  "constructor",
  "toString",
  "hasOwnProperty",
  "valueOf",
  "a__b",
  "Echo",
  "echo",
  "..",
  "-",
];
const { log, lines } = capturingLogger("info");
let http: ServerType;
let remote: RemoteServer;
let instance: TestAtrium;
let ws: string;

/** A server answering initialize, ping, tools/list (NAMES) and tools/call by hand. */
async function answer(request: Request): Promise<Response> {
  if (request.method !== "POST") return new Response(null, { status: 405 });
  const message = (await request.json()) as { id?: number; method: string; params?: Record<string, unknown> };
  if (message.id === undefined) return new Response(null, { status: 202 });
  const reply = (result: unknown) => Response.json({ jsonrpc: "2.0", id: message.id, result });
  switch (message.method) {
    case "initialize":
      return reply({
        protocolVersion: (message.params?.protocolVersion as string) ?? "2025-11-25",
        capabilities: { tools: {} },
        serverInfo: { name: "protos", version: "1.0.0" },
      });
    case "ping":
      return reply({});
    case "tools/list":
      return reply({
        tools: NAMES.map((name) => ({ name, description: `tool ${name}`, inputSchema: { type: "object" } })),
      });
    case "tools/call":
      return reply({ content: [{ type: "text", text: `called ${String(message.params?.name)}` }] });
    default:
      return Response.json({
        jsonrpc: "2.0",
        id: message.id,
        error: { code: -32601, message: "Method not found" },
      });
  }
}

function callAs(name: string): Promise<Response> {
  return instance.rest("alice", "POST", `/v1/workspaces/${ws}/tools/call`, { name, arguments: {} });
}

/** Error-level log lines since `before`: an unexpected failure is logged at error. */
function errorsSince(before: number): unknown[] {
  return lines
    .slice(before)
    .filter((line) => (line.level as number) >= 50)
    .map((line) => [line.msg, (line.err as { message?: string } | undefined)?.message]);
}

beforeAll(async () => {
  http = serve({ fetch: answer, hostname: "127.0.0.1", port: 0 });
  await once(http, "listening");
  remote = await startRemoteServer();
  instance = await startConnectionsAtrium("atrium-connections-tool-names-", new FakeTime(Date.now()), log, {
    healthIntervalSeconds: 3600,
    credentialCheckIntervalSeconds: 86_400,
  });
  ws = await bootstrapWorkspace(instance, "alice");
  for (const [name, url] of [
    ["p", `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`],
    ["rs", remote.url.href],
  ]) {
    const added = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/connections`, { name, url });
    expect(added.status, await added.clone().text()).toBe(201);
  }
});

afterAll(async () => {
  await instance?.stop();
  await remote?.stop();
  http?.close();
});

describe("a connection's tools named like an object's own properties, with `__`, or by case", () => {
  it("are each called as themselves", async () => {
    const before = lines.length;
    const results: string[] = [];
    for (const name of NAMES) {
      const response = await callAs(`p__${name}`);
      const body = (await response.json()) as { content?: { text: string }[] };
      results.push(`${name}: ${response.status} ${body.content?.[0]?.text}`);
    }
    expect({ results, errors: errorsSince(before) }).toEqual({
      results: NAMES.map((name) => `${name}: 200 called ${name}`),
      errors: [],
    });
  });

  it("are listed under their namespaced names", async () => {
    const text = await (await instance.rest("alice", "GET", `/v1/workspaces/${ws}/tools`)).text();
    for (const name of NAMES) expect(text).toContain(JSON.stringify(`p__${name}`));
  });
});

describe("a call under a name no server could list", () => {
  it.each([
    ["200 letters", "a".repeat(200)],
    ["a right-to-left override", "ec\u202eho"],
    ["a line break", "ec\nho"],
  ])("%s: a tool error, not an unexpected failure", async (_, tool) => {
    const before = lines.length;
    const response = await callAs(`rs__${tool}`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ isError: true });
    expect(errorsSince(before)).toEqual([]);
  });
});
