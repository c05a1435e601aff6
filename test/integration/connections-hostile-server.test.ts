import { randomBytes } from "node:crypto";
import { rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Snapshot } from "../../src/platform/connections/snapshot.ts";
import type { Run, Task } from "../../src/platform/tasks/model.ts";
import { bootstrapWorkspace, capturingLogger, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { callTool } from "../helpers/connections.ts";
import { startConnectionsAtrium } from "../helpers/connections-atrium.ts";
import { eventually } from "../helpers/eventually.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import {
  type InterceptingProxy,
  type Interception,
  type ProxiedRequest,
  startInterceptingProxy,
} from "../helpers/intercepting-proxy.ts";
import { addMember } from "../helpers/members.ts";
import { type RemoteServer, startRemoteServer } from "../helpers/remote-server.ts";

// A connection's server that turns on Atrium: it nests its tools' `_meta` deep, echoes the
// credential it was sent back in what members read, redirects every request, or is named so as to
// resolve to a private address (adr/0155). The server is the fixture behind a proxy that answers in
// its place, with the request it was sent in hand.

const SECRET = `Kq7-${randomBytes(12).toString("hex")}`;
const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding", "host", "content-length"]);
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
  await addMember(instance.rest, "alice", ws, "bob", { principalId: testPrincipal("bob").id });
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

/** The fixture's answer to `request`, with `change` made to its text (JSON or an event stream). */
async function forwardedChanged(request: ProxiedRequest, change: (text: string) => string) {
  const headers = Object.entries(request.headers).flatMap(([name, value]) =>
    HOP_BY_HOP.has(name) || value === undefined ? [] : [[name, String(value)] as [string, string]],
  );
  const answer = await fetch(new URL(request.path, remote.url), {
    method: "POST",
    headers,
    body: JSON.stringify(request.message),
  });
  return {
    status: answer.status,
    headers: { "content-type": answer.headers.get("content-type") ?? "application/json" },
    body: change(await answer.text()),
  };
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

  it("listed live at a call's drift check is refused as drift, not failed", async () => {
    const added = await add("drifter");
    expect(added.status, await added.clone().text()).toBe(201);
    proxy.intercept((method, request) =>
      method === "tools/list"
        ? forwardedChanged(request, (text) => {
            const framing = /^event: message\ndata: /m.test(text) ? "event: message\ndata: " : "";
            const message = JSON.parse(text.replace(framing, "").trim());
            for (const tool of message.result.tools)
              tool.inputSchema = { ...tool.inputSchema, "x-deep": "DEEP" };
            // Spelled out: JSON.stringify itself recurses, and overflows long before this depth.
            const deep = `${"[".repeat(100_000)}0${"]".repeat(100_000)}`;
            return `${framing}${JSON.stringify(message).replaceAll('"DEEP"', deep)}${framing ? "\n\n" : ""}`;
          })
        : undefined,
    );
    const answer = await callTool(instance, ws, "drifter__echo", { text: "hi" }, "bob");
    expect(answer.isError).toBe(true);
    expect(answer.content?.[0]?.text).toContain("changed upstream");
  });
});

describe("a server that echoes the credential", () => {
  /** Its instructions and a tool's description say the key it was sent, at every listing. */
  const echoing: Interception = (method, request) =>
    method === "initialize" || method === "tools/list"
      ? forwardedChanged(request, (text) =>
          text
            .replace("A test server: echo, add and write.", `Send key ${request.headers["x-api-key"]}.`)
            .replace("Echo the text back.", `Echo, with key ${request.headers["x-api-key"]}.`),
        )
      : undefined;
  /** `echoing`, and a `tools/call` answered with what `answer` makes of the key it was sent. */
  const calls =
    (answer: (key: string) => Record<string, unknown>): Interception =>
    (method, request) =>
      method === "tools/call"
        ? {
            status: 200,
            headers: { "content-type": "application/json" },
            body: JSON.stringify({
              jsonrpc: "2.0",
              id: request.message?.id,
              ...answer(String(request.headers["x-api-key"])),
            }),
          }
        : echoing(method, request);

  beforeAll(async () => {
    proxy.intercept(echoing);
    const added = await add("echoer");
    expect(added.status, await added.clone().text()).toBe(201);
  });

  it("is photographed without it in its instructions and descriptions, and its tools still call", async () => {
    proxy.intercept(echoing);
    const read = await instance.rest(
      "bob",
      "GET",
      `/v1/workspaces/${ws}/connections/echoer/tools/snapshots/1`,
    );
    const text = await read.text();
    expect(read.status).toBe(200);
    expect(text).not.toContain(SECRET);
    const snapshot = JSON.parse(text) as Snapshot;
    expect(snapshot.instructions).toBe("Send key [redacted].");
    expect(snapshot.tools.find((tool) => tool.name === "echo")?.description).toBe(
      "Echo, with key [redacted].",
    );
    // The live listing is told the same way, so the drift check finds the tool as photographed.
    const answer = await callTool(instance, ws, "echoer__echo", { text: "hi" }, "bob");
    expect(answer.isError).toBeFalsy();
  });

  it("reaches a member without it in a JSON-RPC error", async () => {
    proxy.intercept(calls((key) => ({ error: { code: -32603, message: `upstream refused key ${key}` } })));
    const answer = await callTool(instance, ws, "echoer__echo", { text: "hi" }, "bob");
    expect(answer.isError).toBe(true);
    expect(JSON.stringify(answer)).not.toContain(SECRET);
  });

  it("reaches a member, and a task's run, without it in an isError result", async () => {
    proxy.intercept(
      calls((key) => ({
        result: {
          content: [{ type: "text", text: `upstream refused key ${key}` }],
          structuredContent: { echoed: { sent: key } },
          isError: true,
        },
      })),
    );
    const answer = await callTool(instance, ws, "echoer__echo", { text: "hi" }, "bob");
    expect(answer.isError).toBe(true);
    expect(answer.content?.[0]?.text).toBe("upstream refused key [redacted]");
    expect(JSON.stringify(answer)).not.toContain(SECRET);

    const created = await instance.rest("bob", "POST", `/v1/workspaces/${ws}/tasks`, {
      name: "echo once",
      action: { tool: "echoer__echo", arguments: { text: "hi" } },
    });
    expect(created.status, await created.clone().text()).toBe(201);
    const task = (await created.json()) as Task;
    const started = await instance.rest("bob", "POST", `/v1/workspaces/${ws}/tasks/${task.id}/runs`, {});
    const run = (await started.json()) as Run;
    let ended = "";
    await eventually(async () => {
      const seen = await instance.rest("bob", "GET", `/v1/workspaces/${ws}/tasks/${task.id}/runs/${run.id}`);
      ended = await seen.text();
      expect((JSON.parse(ended) as Run).execution.status).not.toBe("running");
    });
    expect(ended).toContain("upstream refused key [redacted]");
    expect(ended).not.toContain(SECRET);
  });
});

describe("a server that redirects", () => {
  it("is not followed, with the credential or without, and the add says so", async () => {
    const reachedThere: unknown[] = [];
    proxy.intercept((_method, { headers, path }) => {
      if (path.includes("moved=1")) {
        reachedThere.push(headers["x-api-key"]);
        return undefined;
      }
      return { status: 307, headers: { location: "/mcp?moved=1" } };
    });
    const added = await add("moved");
    expect(reachedThere).toEqual([]);
    expect(added.status).toBe(400);
    expect(await added.text()).toContain("answered HTTP 307, a redirect, which Atrium does not follow");
  });
});

describe("with private addresses refused", () => {
  const refusing = capturingLogger("info");
  let strict: TestAtrium;
  let strictWs: string;

  beforeAll(async () => {
    strict = await startConnectionsAtrium("atrium-private-refused-", time, refusing.log, {
      allowPrivateAddresses: false,
    });
    strictWs = await bootstrapWorkspace(strict, "alice");
    await addMember(strict.rest, "alice", strictWs, "bob", { principalId: testPrincipal("bob").id });
  });

  afterAll(async () => {
    await strict?.stop();
    if (strict) await rm(strict.dir, { recursive: true, force: true });
  });

  it("a member's refused connection learns that the address is not public, not what it is", async () => {
    const added = await strict.rest("bob", "POST", `/v1/workspaces/${strictWs}/connections`, {
      personal: true,
      name: "probe",
      url: "https://localhost:9/mcp",
    });
    const text = await added.text();
    expect(added.status).toBe(400);
    expect(text).toContain("localhost is not at a public internet address");
    expect(text).toContain("connections.allowPrivateAddresses");
    expect(text).not.toMatch(/127\.0\.0\.1|::1|loopback/);
    // The operator's log says what the name resolved to.
    const logged = refusing.lines.find((line) => line.host === "localhost");
    expect(logged).toMatchObject({ kind: "loopback" });
    expect(String(logged?.address)).toMatch(/^(127\.|::1$)/);
  });

  it("a name that does not resolve is refused in the same words: which internal names exist is not told", async () => {
    const refusalOf = async (name: string, host: string) => {
      const added = await strict.rest("bob", "POST", `/v1/workspaces/${strictWs}/connections`, {
        personal: true,
        name,
        url: `https://${host}:9/mcp`,
      });
      expect(added.status).toBe(400);
      return (await added.text()).replaceAll(host, "<host>");
    };
    const missing = await refusalOf("missing", "no-such-host.invalid");
    expect(missing).not.toMatch(/ENOTFOUND|getaddrinfo|EAI_AGAIN/);
    expect(missing).toBe(await refusalOf("missing", "localhost"));
    // The operator's log says the name did not resolve.
    const logged = refusing.lines.find((line) => line.host === "no-such-host.invalid");
    expect(logged).toMatchObject({ kind: "unresolved" });
    expect(String(logged?.cause)).toMatch(/ENOTFOUND|EAI_AGAIN/);
  });
});
