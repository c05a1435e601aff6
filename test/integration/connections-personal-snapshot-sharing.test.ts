import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { type ServerType, serve } from "@hono/node-server";
import { createMcpHandler, type McpHttpHandler, Server } from "@modelcontextprotocol/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Snapshot } from "../../src/platform/connections/snapshot.ts";
import { ConnectionStore } from "../../src/platform/connections/store.ts";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";

// A personal connection is a client in every workspace its owner is in (ADR 0042), each pinning its
// snapshot (up to 1,000 tools of 64 KiB). Read per client, the process held one parsed copy per
// workspace; now one per (connection, version), shared, and let go with the last client holding it.

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const TOOLS = 40;
const WORKSPACES = 4;
const CONNECTIONS = 2;

let handler: McpHttpHandler;
let http: ServerType;
let instance: TestAtrium;
const workspaces: string[] = [];
/** Every snapshot the store answered, held weakly: what is still alive is what Atrium holds. */
const answered: { name: string; snapshot: WeakRef<Snapshot> }[] = [];
const original = ConnectionStore.prototype.snapshot;

function sizableTool(i: number) {
  const properties: Record<string, { type: "string"; description: string }> = {};
  for (let p = 0; p < 20; p++) properties[`field_${p}`] = { type: "string", description: "d".repeat(1000) };
  return {
    name: `tool_${i}`,
    description: "x".repeat(4000),
    inputSchema: { type: "object" as const, properties },
  };
}

async function aliveCopies(): Promise<Map<string, Set<Snapshot>>> {
  // Two turns and two collections: a WeakRef deref'd in a job keeps its target for that job.
  await new Promise((resolve) => setTimeout(resolve, 0));
  gc();
  await new Promise((resolve) => setTimeout(resolve, 0));
  gc();
  const alive = new Map<string, Set<Snapshot>>();
  for (const { name, snapshot } of answered) {
    const held = snapshot.deref();
    if (held === undefined) continue;
    const copies = alive.get(name) ?? new Set<Snapshot>();
    copies.add(held);
    alive.set(name, copies);
  }
  return alive;
}

beforeAll(async () => {
  const tools = Array.from({ length: TOOLS }, (_, i) => sizableTool(i));
  handler = createMcpHandler(() => {
    const server = new Server({ name: "sizable", version: "1.0.0" }, { capabilities: { tools: {} } });
    server.setRequestHandler("tools/list", () => ({ tools }));
    server.setRequestHandler("tools/call", () => ({ content: [{ type: "text", text: "ok" }] }));
    return server;
  });
  http = serve({ fetch: (request) => handler.fetch(request), hostname: "127.0.0.1", port: 0 });
  await once(http, "listening");
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;

  // Not vi.spyOn: a spy keeps every value it answered, which is the retention measured here.
  ConnectionStore.prototype.snapshot = async function (this: ConnectionStore, workspaceId, name, version) {
    const snapshot = await original.call(this, workspaceId, name, version);
    answered.push({ name, snapshot: new WeakRef(snapshot) });
    return snapshot;
  };
  instance = await startTestAtrium({ sections: { connections: { allowPrivateAddresses: true } } });
  workspaces.push(await bootstrapWorkspace(instance, "alice"));
  for (let i = 1; i < WORKSPACES; i++) {
    const created = await instance.rest("alice", "POST", "/v1/workspaces", { name: `w${i}` });
    expect(created.status).toBe(201);
    workspaces.push(((await created.json()) as { id: string }).id);
  }
  for (let c = 0; c < CONNECTIONS; c++) {
    const added = await instance.rest("alice", "POST", `/v1/workspaces/${workspaces[0]}/connections`, {
      name: `sizable${c}`,
      url,
      personal: true,
    });
    expect(added.status, await added.clone().text()).toBe(201);
  }
}, 120_000);

afterAll(async () => {
  ConnectionStore.prototype.snapshot = original;
  await instance?.stop();
  await handler?.close();
  http?.close();
});

describe("a member's personal connections served in every workspace they are in", () => {
  it("hold one parsed snapshot each, shared by every workspace's client", async () => {
    for (const ws of workspaces) {
      const listed = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/tools`);
      expect(listed.status).toBe(200);
      const text = await listed.text();
      for (let c = 0; c < CONNECTIONS; c++) expect(text).toContain(`my_sizable${c}__tool_${TOOLS - 1}`);
    }
    const alive = await aliveCopies();
    expect([...alive.keys()].sort()).toEqual(["my_sizable0", "my_sizable1"]);
    for (const copies of alive.values()) expect(copies.size).toBe(1);
  }, 120_000);

  it("let a connection's snapshot go once no workspace serves it", async () => {
    const removed = await instance.rest(
      "alice",
      "DELETE",
      `/v1/workspaces/${workspaces[1]}/connections/my_sizable0`,
    );
    expect(removed.status).toBe(204);
    // Each workspace keeps the owner's last composed listing (src/sources/composed-lists.ts), the
    // removed client in it, until the owner's next listing there.
    for (const ws of workspaces) {
      const listed = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/tools`);
      expect(await listed.text()).not.toContain("my_sizable0__");
    }
    const alive = await aliveCopies();
    expect([...alive.keys()]).toEqual(["my_sizable1"]);
    expect(alive.get("my_sizable1")?.size).toBe(1);
  }, 120_000);
});
