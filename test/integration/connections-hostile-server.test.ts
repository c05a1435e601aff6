import { randomBytes } from "node:crypto";
import { rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, capturingLogger, type TestAtrium } from "../helpers/atrium.ts";
import { startConnectionsAtrium } from "../helpers/connections-atrium.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { type InterceptingProxy, startInterceptingProxy } from "../helpers/intercepting-proxy.ts";
import { type RemoteServer, startRemoteServer } from "../helpers/remote-server.ts";

// A connection's server that turns on Atrium: it nests its tools' `_meta` deep (adr/0155). The
// server is the fixture behind a proxy that answers in its place, with the request it was sent in
// hand.

const SECRET = `Kq7-${randomBytes(12).toString("hex")}`;
const time = new FakeTime(Date.now());
const captured = capturingLogger("info");
let remote: RemoteServer;
let proxy: InterceptingProxy;
let instance: TestAtrium;
let ws: string;

beforeAll(async () => {
  remote = await startRemoteServer({
    requireHeader: { name: "x-api-key", value: SECRET },
    eras: ["2025-11-25"],
  });
  proxy = await startInterceptingProxy(remote.url);
  instance = await startConnectionsAtrium("atrium-hostile-server-", time, captured.log);
  ws = await bootstrapWorkspace(instance, "alice");
});

afterEach(() => proxy.intercept());

afterAll(async () => {
  await instance?.stop();
  await proxy?.close();
  await remote?.stop();
  if (instance) await rm(instance.dir, { recursive: true, force: true });
});

function add(name: string) {
  return instance.rest("alice", "POST", `/v1/workspaces/${ws}/connections`, {
    name,
    url: proxy.url.href,
    auth: { kind: "static", header: "x-api-key", value: SECRET },
  });
}

function nested(depth: number, leaf: unknown): unknown {
  let value = leaf;
  for (let level = 0; level < depth; level++) value = [value];
  return value;
}

/** Answers `tools/list` with `tool` alone. */
function listing(tool: Record<string, unknown>) {
  proxy.intercept((method, { message }) =>
    method === "tools/list"
      ? {
          status: 200,
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ jsonrpc: "2.0", id: message?.id, result: { tools: [tool] } }),
        }
      : undefined,
  );
}

describe("a tool nested deep", () => {
  it("is stored in about the characters its JSON takes, not its depth times its width", async () => {
    // 60 levels down (within screening's 64), 20,000 leaves: indented, each took a line of 120 spaces.
    const tool = {
      name: "wide",
      description: "A tool.",
      inputSchema: { type: "object", properties: {} },
      _meta: {
        "vendor/x": nested(
          60,
          Array.from({ length: 20_000 }, () => 0),
        ),
      },
    };
    const toolChars = JSON.stringify(tool).length;
    expect(toolChars).toBeLessThan(65_536);
    listing(tool);
    const added = await add("wide");
    expect(added.status, await added.clone().text()).toBe(201);
    const file = join(instance.root, ws, "connections", "servers", "wide", "snapshots", "1.json");
    expect((await stat(file)).size).toBeLessThan(toolChars + 4096);
  });

  it("past 64 levels is refused by name, and nothing is stored", async () => {
    listing({
      name: "deep",
      description: "A tool.",
      inputSchema: { type: "object", properties: {} },
      _meta: { "vendor/x": nested(3000, 0) },
    });
    const added = await add("deep");
    expect(added.status).toBe(400);
    expect(await added.text()).toContain(
      'tool \\"deep\\": its _meta nests objects and arrays more than 64 levels deep',
    );
    expect((await instance.rest("alice", "GET", `/v1/workspaces/${ws}/connections/deep`)).status).toBe(404);
  });
});
