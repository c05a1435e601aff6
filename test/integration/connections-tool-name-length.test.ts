import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { type ServerType, serve } from "@hono/node-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, capturingLogger, type TestAtrium } from "../helpers/atrium.ts";
import { startConnectionsAtrium } from "../helpers/connections-atrium.ts";
import { FakeTime } from "../helpers/fake-time.ts";

// MCP 2025-11-25 (and 2026-07-28) say a tool name SHOULD be 1 to 128 characters, and the SDK's own
// validateToolName calls a longer one invalid. A remote tool's own name may be 128 characters and a
// connection's 63 (66 with `my_`): served as `<connection>__<tool>`, a client was listed names of
// up to 196 characters. Photographing now judges the name as served (adr/0039, amended 2026-12-07).
const TOOL = "a".repeat(100);
/** The longest connection name that serves TOOL in 128 characters. */
const FITS = `c${"x".repeat(25)}`;
let tools = [TOOL];
let http: ServerType;
let url: string;
let instance: TestAtrium;
let ws: string;
const { log, lines } = capturingLogger("info");

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
        serverInfo: { name: "long-names", version: "1.0.0" },
      });
    case "ping":
      return reply({});
    case "tools/list":
      return reply({
        tools: tools.map((name) => ({ name, description: `tool ${name}`, inputSchema: { type: "object" } })),
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

beforeAll(async () => {
  http = serve({ fetch: answer, hostname: "127.0.0.1", port: 0 });
  await once(http, "listening");
  url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  instance = await startConnectionsAtrium("atrium-tool-name-length-", new FakeTime(Date.now()), log);
  ws = await bootstrapWorkspace(instance, "alice");
});

afterAll(async () => {
  await instance?.stop();
  http?.close();
});

async function listedNames(): Promise<string[]> {
  const client = await instance.mcpClient("alice", ws);
  return (await client.listTools()).tools.map((t) => t.name);
}

describe("a namespaced tool name", () => {
  it("is never served longer than the 128 characters MCP allows: the add is refused, saying a shorter connection name helps", async () => {
    // A personal connection's owner gives the name without the `my_` Atrium adds: told 3 fewer.
    for (const [body, room] of [
      [{ name: `c${"x".repeat(62)}`, url }, 26],
      [{ name: `c${"x".repeat(62)}`, url, personal: true }, 23],
    ] as const) {
      const added = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/connections`, body);
      const text = await added.text();
      expect(added.status, text).toBe(400);
      expect(text).toContain("over the 128 MCP allows");
      expect(text).toContain(`a connection name of at most ${room} characters would take it`);
    }
    const listed = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/connections`);
    expect(((await listed.json()) as { connections: unknown[] }).connections).toEqual([]);
    expect((await listedNames()).filter((name) => name.length > 128)).toEqual([]);
    expect(lines.filter((l) => (l.level as number) >= 50)).toEqual([]);
  });

  it("is served at exactly 128, and a refresh to a longer one is refused, the current snapshot still served", async () => {
    const added = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/connections`, {
      name: FITS,
      url,
    });
    expect(added.status, await added.clone().text()).toBe(201);
    expect(await listedNames()).toContain(`${FITS}__${TOOL}`);
    tools = [TOOL, `${TOOL}b`];
    const refreshed = await instance.rest(
      "alice",
      "POST",
      `/v1/workspaces/${ws}/connections/${FITS}/tools/refresh`,
    );
    const text = await refreshed.text();
    expect(refreshed.status, text).toBe(400);
    expect(text).toContain("129 characters, over the 128 MCP allows");
    const names = (await listedNames()).filter((name) => name.startsWith(`${FITS}__`));
    expect(names).toEqual([`${FITS}__${TOOL}`]);
  });
});
