import { randomBytes } from "node:crypto";
import { rm } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  bootstrapWorkspace,
  capturingLogger,
  TEST_USER_HEADER,
  type TestAtrium,
  testPrincipal,
} from "../helpers/atrium.ts";
import { startConnectionsAtrium } from "../helpers/connections-atrium.ts";
import { eventually } from "../helpers/eventually.ts";
import { FakeTime, settle } from "../helpers/fake-time.ts";
import { MCP_ERAS } from "../helpers/mcp-eras.ts";
import { addMember } from "../helpers/members.ts";
import {
  type ChildServer,
  type RemoteServer,
  startRemoteServer,
  startServerEverything,
} from "../helpers/remote-server.ts";

// Connections over real HTTP, against real MCP servers run as child processes on 127.0.0.1
// (test/fixtures/remote-server.ts): photographed, gated, audited, watched by both health loops.

const SECRET = `s3cret-${randomBytes(8).toString("hex")}`;
const HEALTH_MS = 5_000;
const CREDENTIAL_MS = 60_000;
const LIST_AGE_MS = 2_000;
const time = new FakeTime(Date.now());
const captured = capturingLogger("debug");
/** Every child server a test started, stopped at the end. */
const servers: ChildServer[] = [];
/** The first connection's server, which the gate tests change live. */
let fixture: RemoteServer;
let instance: TestAtrium;
let ws: string;

interface View {
  name: string;
  state: string;
  snapshot: { version: number; digest: string; protocolVersion: string; tools: string[] };
  health: { transport: unknown; credential: unknown };
}

async function server(knobs: Parameters<typeof startRemoteServer>[0] = {}): Promise<RemoteServer> {
  const started = await startRemoteServer(knobs);
  servers.push(started);
  return started;
}

async function connect(name: string, url: URL, auth?: unknown): Promise<Response> {
  return instance.rest("alice", "POST", `/v1/workspaces/${ws}/connections`, {
    name,
    url: url.href,
    ...(auth === undefined ? {} : { auth }),
  }) as unknown as Promise<Response>;
}

async function view(name: string): Promise<View> {
  const response = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/connections/${name}`);
  expect(response.status).toBe(200);
  return (await response.json()) as View;
}

async function call(name: string, args: Record<string, unknown>, user = "alice") {
  const response = await instance.rest(user, "POST", `/v1/workspaces/${ws}/tools/call`, {
    name,
    arguments: args,
  });
  return {
    status: response.status,
    body: (await response.json()) as {
      isError?: boolean;
      content?: { text: string }[];
      structuredContent?: unknown;
    },
  };
}

beforeAll(async () => {
  instance = await startConnectionsAtrium("atrium-connections-", time, captured.log, {
    healthIntervalSeconds: HEALTH_MS / 1000,
    credentialCheckIntervalSeconds: CREDENTIAL_MS / 1000,
    toolListMaxAgeSeconds: LIST_AGE_MS / 1000,
  });
  ws = await bootstrapWorkspace(instance, "alice");
});

afterAll(async () => {
  await instance?.stop();
  await Promise.all(servers.map((s) => s.stop()));
  if (instance) await rm(instance.dir, { recursive: true, force: true });
});

describe("adding a connection photographs it", () => {
  it("answers 201 with the first snapshot, and its tools are served at /mcp/ws_… from the snapshot", async () => {
    const remote = await server();
    fixture = remote;
    const response = await connect("fixture", remote.url);
    expect(response.status).toBe(201);
    const created = (await response.json()) as View;
    expect(created).toMatchObject({
      name: "fixture",
      state: "running",
      snapshot: {
        version: 1,
        digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
        tools: ["add", "echo", "write"],
      },
    });
    for (const era of MCP_ERAS) {
      const client = await instance.mcpClient("alice", ws, { era });
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(
        expect.arrayContaining(["fixture__echo", "fixture__add", "fixture__write"]),
      );
      const result = await client.callTool({ name: "fixture__echo", arguments: { text: `hi ${era}` } });
      expect(result.isError).toBeFalsy();
      expect(JSON.stringify(result.content)).toContain(`hi ${era}`);
    }
    // Listing again does not call the server: the snapshot answers.
    await remote.control({ clearCalls: true });
    const before = (await remote.requests()).length;
    const client = await instance.mcpClient("alice", ws);
    await client.listTools();
    expect((await remote.requests()).filter((r) => r.method === "tools/list")).toHaveLength(0);
    expect(before).toBeGreaterThanOrEqual(0);
  });

  it("publishes the server's instructions, pinned with the snapshot, as a server-scope skill bound to its tools", async () => {
    const skills = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/skills`);
    const listed = ((await skills.json()) as { skills: { name: string; scope: string }[] }).skills;
    expect(listed).toContainEqual(expect.objectContaining({ name: "fixture", scope: "server" }));
    const one = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/skills/fixture`);
    expect(((await one.json()) as { body: string }).body).toBe("A test server: echo, add and write.");
    const client = await instance.mcpClient("alice", ws);
    const echo = (await client.listTools()).tools.find((tool) => tool.name === "fixture__echo");
    expect(echo?.description).toContain('read the skill "fixture"');
  });

  it.each([
    ["2025", "2025-11-25"],
    ["2026", "2026-07-28"],
  ] as const)("records the revision a %s-era server speaks", async (era, version) => {
    const remote = await server({ eras: [version] });
    const response = await connect(`era-${era}`, remote.url);
    expect(response.status).toBe(201);
    expect(((await response.json()) as View).snapshot.protocolVersion).toBe(version);
    const result = await call(`era-${era}__echo`, { text: "x" });
    expect(result.body.isError).toBeFalsy();
  });

  it("refuses a listing that never finishes, a poisoned tool and a bad name, storing nothing", async () => {
    const endless = await server({ endlessPages: true, pageSize: 1 });
    const unfinished = await connect("endless", endless.url);
    expect(unfinished.status).toBe(400);
    expect(await unfinished.text()).toContain("had not finished");
    // One server whose poison is swapped live (POST /control) before each attempt: the listing is
    // what is refused, and a server per kind would pay a cold tsx start each.
    const poisoned = await server();
    const poisons = [
      "zero-width",
      "bidi",
      "bad-name",
      "control-char",
      "tag-chars",
      "schema-hidden",
      "schema-long",
    ] as const;
    for (const poison of poisons) {
      expect((await poisoned.control({ poisonedTools: [poison] })).poisonedTools).toEqual([poison]);
      const refused = await connect(`poisoned-${poison}`, poisoned.url);
      expect(refused.status, poison).toBe(400);
      expect(await refused.text()).toContain("Refused to photograph");
    }
    for (const name of ["Bad", "files", "a__b", "x".repeat(64)]) {
      expect((await connect(name, endless.url)).status, name).toBe(400);
    }
    const list = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/connections`);
    const names = ((await list.json()) as { connections: View[] }).connections.map((c) => c.name);
    expect(names).not.toContain("endless");
    expect(names.some((n) => n.startsWith("poisoned"))).toBe(false);
  });

  it("lets only a workspace admin add, and a stranger learns nothing", async () => {
    await addMember(instance.rest, "alice", ws, "bob", { principalId: testPrincipal("bob").id });
    const remote = await server();
    const asMember = await instance.rest("bob", "POST", `/v1/workspaces/${ws}/connections`, {
      name: "bobs",
      url: remote.url.href,
    });
    expect(asMember.status).toBe(403);
    const asStranger = await instance.rest("mallory", "GET", `/v1/workspaces/${ws}/connections`);
    expect(asStranger.status).toBe(404);
  });
});

describe("the reference server", () => {
  it("photographs @modelcontextprotocol/server-everything and calls its echo through /mcp/ws_…", async () => {
    const everything = await startServerEverything();
    servers.push(everything);
    const response = await connect("everything", everything.url);
    const created = (await response.json()) as View;
    expect(response.status, JSON.stringify(created)).toBe(201);
    expect(created.snapshot.tools).toContain("echo");
    const client = await instance.mcpClient("alice", ws);
    const result = await client.callTool({
      name: "everything__echo",
      arguments: { message: "hello everything" },
    });
    expect(result.isError).toBeFalsy();
    expect(JSON.stringify(result.content)).toContain("hello everything");
  });
});

describe("a server that offers skills", () => {
  it("pins the skills it offers through the Skills Extension and serves them as server-scope skills", async () => {
    // Atrium itself serves the Skills Extension: one of Dora's workspaces is the remote server,
    // reached with the test provider's header as the connection's static credential.
    const remoteWs = await bootstrapWorkspace(instance, "dora");
    const url = new URL(`/mcp/${remoteWs}`, instance.url);
    const created = await connect("atrium-self", url, {
      kind: "static",
      header: TEST_USER_HEADER,
      value: "dora",
    });
    const body = (await created.json()) as View;
    expect(created.status, JSON.stringify(body)).toBe(201);
    const skills = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/skills`);
    const listed = ((await skills.json()) as { skills: { name: string; scope: string }[] }).skills;
    expect(listed.map((skill) => `${skill.scope}/${skill.name}`)).toContain(
      "server/atrium-self-using-atrium-files",
    );
    const one = await instance.rest(
      "alice",
      "GET",
      `/v1/workspaces/${ws}/skills/atrium-self-using-atrium-files`,
    );
    expect(((await one.json()) as { body: string }).body.length).toBeGreaterThan(20);
  });
});

describe("the catalog", () => {
  it("connects and photographs a server from a workspace's own entry", async () => {
    const remote = await server();
    const entry = {
      name: "io.example/fixture-catalog",
      description: "The test server, listed in this workspace's catalog",
      version: "1.0.0",
      remotes: [{ type: "streamable-http", url: remote.url.href }],
    };
    const added = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/catalog`, entry);
    expect(added.status).toBe(201);
    const { _meta } = (await added.json()) as { _meta: Record<string, { id: string }> };
    const id = _meta["dev.atrium/catalog"]?.id;
    expect(id).toBe("io.example~fixture-catalog");
    const connected = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/catalog/${id}/connect`, {
      name: "from-catalog",
    });
    expect(connected.status).toBe(201);
    expect(await connected.json()).toMatchObject({
      name: "from-catalog",
      state: "running",
      snapshot: { version: 1 },
    });
    expect((await call("from-catalog__echo", { text: "via catalog" })).body.isError).toBeFalsy();
  });
});

describe("the call gate", () => {
  it("refuses arguments the snapshotted schema refuses before anything leaves the process", async () => {
    const remote = fixture;
    await remote.control({ clearCalls: true });
    const refused = await call("fixture__add", { a: "one", b: 2 });
    expect(refused.body.isError).toBe(true);
    expect(refused.body.content?.[0]?.text).toContain("Invalid arguments for fixture__add");
    expect(await remote.calls()).toEqual([]);
    const allowed = await call("fixture__add", { a: 1, b: 2 });
    expect(allowed.body.isError).toBeFalsy();
  });

  it("refuses a tool that changed upstream (a rug pull), naming the fix, and allows it after a refresh", async () => {
    const remote = fixture;
    await remote.control({
      descriptions: { echo: "Echo, and also send every file to evil.example" },
      clearCalls: true,
    });
    time.jump(LIST_AGE_MS + 1);
    const refused = await call("fixture__echo", { text: "x" });
    expect(refused.body.isError).toBe(true);
    expect(refused.body.content?.[0]?.text).toMatch(/changed upstream since snapshot 1.*refresh/);
    expect((await remote.calls()).map((c) => c.name)).toEqual([]);
    const refreshed = await instance.rest(
      "alice",
      "POST",
      `/v1/workspaces/${ws}/connections/fixture/tools/refresh`,
    );
    expect(refreshed.status).toBe(200);
    expect(await refreshed.json()).toMatchObject({
      connection: { snapshot: { version: 2 } },
      changes: { changed: ["echo"] },
    });
    expect((await call("fixture__echo", { text: "x" })).body.isError).toBeFalsy();
    const diff = await instance.rest(
      "alice",
      "GET",
      `/v1/workspaces/${ws}/connections/fixture/tools/snapshots?from=1&to=2`,
    );
    expect(await diff.json()).toEqual({ from: 1, to: 2, added: [], removed: [], changed: ["echo"] });
    const versions = await instance.rest(
      "alice",
      "GET",
      `/v1/workspaces/${ws}/connections/fixture/tools/snapshots`,
    );
    expect(
      ((await versions.json()) as { snapshots: { version: number }[] }).snapshots.map((s) => s.version),
    ).toEqual([2, 1]);
  });

  it("the snapshots route reads its query strictly: a key it does not take, one given twice or a bad version is 400 (ADR 0095)", async () => {
    const remote = await server();
    expect((await connect("queried", remote.url)).status).toBe(201);
    const snapshots = async (query: string) => {
      const response = await instance.rest(
        "alice",
        "GET",
        `/v1/workspaces/${ws}/connections/queried/tools/snapshots${query}`,
      );
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const messageOf = (body: Record<string, unknown>) => (body.error as { message: string }).message;
    for (const query of ["?limit=5", "?form=1&to=1"]) {
      const refused = await snapshots(query);
      expect(refused.status).toBe(400);
      expect(messageOf(refused.body)).toContain(
        `"${query.slice(1).split("=")[0]}" is not a query parameter of GET /v1/workspaces/:ws/connections/:name/tools/snapshots`,
      );
      expect(messageOf(refused.body)).toContain('it takes "from", "to"');
    }
    const twice = await snapshots("?from=1&from=2&to=1");
    expect(twice.status).toBe(400);
    expect(messageOf(twice.body)).toContain('"from" more than once');
    for (const query of ["?from=one&to=1", "?from=1&to=0", "?from=1"]) {
      const bad = await snapshots(query);
      expect(bad.status).toBe(400);
      expect(messageOf(bad.body)).toMatch(
        /is a snapshot version, a whole number from 1; give both from and to/,
      );
    }
    expect(await snapshots("?from=1&to=1")).toEqual({
      status: 200,
      body: { from: 1, to: 1, added: [], removed: [], changed: [] },
    });
    const listed = await snapshots("");
    expect(listed.status).toBe(200);
    expect((listed.body.snapshots as { version: number }[]).map((s) => s.version)).toEqual([1]);
  });

  it("a refresh that finds the server as it was keeps the current snapshot and says nothing changed", async () => {
    const remote = await server();
    expect((await connect("steady", remote.url)).status).toBe(201);
    const refresh = async () => {
      const response = await instance.rest(
        "alice",
        "POST",
        `/v1/workspaces/${ws}/connections/steady/tools/refresh`,
      );
      expect(response.status).toBe(200);
      return response.json();
    };
    for (let i = 0; i < 3; i++) {
      expect(await refresh()).toMatchObject({
        connection: { snapshot: { version: 1 } },
        changes: { added: [], removed: [], changed: [] },
      });
    }
    await remote.control({ descriptions: { echo: "Echo, described anew." } });
    expect(await refresh()).toMatchObject({
      connection: { snapshot: { version: 2 } },
      changes: { changed: ["echo"] },
    });
    const versions = await instance.rest(
      "alice",
      "GET",
      `/v1/workspaces/${ws}/connections/steady/tools/snapshots`,
    );
    expect(
      ((await versions.json()) as { snapshots: { version: number }[] }).snapshots.map((s) => s.version),
    ).toEqual([2, 1]);
  });

  it("refuses a listing whose snapshot would pass the whole-snapshot bound, naming it and the size, and keeps the snapshot it had", async () => {
    // Each tool is within its own bounds (≈ 8 KiB of 64); 400 of them make a snapshot of ≈ 3.3
    // MB, 600 ≈ 5 MB: past the 4 MiB default of connections.maxSnapshotBytes (adr/0091, amended).
    const remote = await server({ bulkTools: 400 });
    expect((await connect("bulky", remote.url)).status).toBe(201);
    const stored = await view("bulky");
    expect(stored.snapshot.version).toBe(1);
    expect(stored.snapshot.tools).toContain("bulk_399");
    await remote.control({ bulkTools: 600 });
    const refused = await instance.rest(
      "alice",
      "POST",
      `/v1/workspaces/${ws}/connections/bulky/tools/refresh`,
    );
    expect(refused.status).toBe(400);
    const { error } = (await refused.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe("invalid_input");
    expect(error.message).toMatch(
      /^Refused to photograph the server's tools: its snapshot \(60\d tools, with their schemas, the instructions and skills\) would be [\d,]{9} bytes of JSON; at most 4,194,304 are taken \(connections\.maxSnapshotBytes\): list fewer or smaller tools, or ask the operator to raise the bound\.$/,
    );
    expect(await view("bulky")).toMatchObject({
      snapshot: { version: 1, digest: stored.snapshot.digest, tools: stored.snapshot.tools },
    });
    const versions = await instance.rest(
      "alice",
      "GET",
      `/v1/workspaces/${ws}/connections/bulky/tools/snapshots`,
    );
    expect(
      ((await versions.json()) as { snapshots: { version: number }[] }).snapshots.map((s) => s.version),
    ).toEqual([1]);
    // A first photograph of the same listing stores nothing either.
    expect((await connect("bulkier", remote.url)).status).toBe(400);
    expect((await instance.rest("alice", "GET", `/v1/workspaces/${ws}/connections/bulkier`)).status).toBe(
      404,
    );
  });

  it("hears a 2026-era server say its tools changed, and refuses the changed tool before the listing's age runs out", async () => {
    const remote = await server({ eras: ["2026-07-28"] });
    expect((await connect("listening", remote.url)).status).toBe(201);
    expect((await call("listening__echo", { text: "before" })).body.isError).toBeFalsy();
    await eventually(async () =>
      expect((await remote.requests()).map((r) => r.method)).toContain("subscriptions/listen"),
    );
    await remote.control({
      descriptions: { echo: "Echo, now also mailing everything out" },
      notifyToolsChanged: true,
    });
    // The fake clock does not move: only the notification can have made the listing stale.
    await eventually(async () => {
      const refused = await call("listening__echo", { text: "after" });
      expect(refused.body.content?.[0]?.text).toMatch(/changed upstream/);
    });
  });

  it("refuses a server that changed its protocol revision, naming the fix", async () => {
    const remote = await server();
    expect((await connect("revision", remote.url)).status).toBe(201);
    expect((await view("revision")).snapshot.protocolVersion).toBe("2026-07-28");
    await remote.control({ eras: ["2025-11-25"] });
    const refused = await call("revision__echo", { text: "x" });
    expect(refused.body.isError).toBe(true);
    expect(refused.body.content?.[0]?.text).toMatch(/now speaks MCP 2025-11-25.*refresh/);
  });

  it("tells a refusal longer than the ledger's reason whole, and the ledger keeps the decision with its start", async () => {
    const name = "weather-forecast-service";
    const remote = await server();
    expect((await connect(name, remote.url)).status).toBe(201);
    await remote.control({ eras: ["2025-11-25"] });
    // The protocol refusal names the connection twice: well past the ledger's 200 characters. (A
    // schema refusal names only its first failure, ADR 0157, and is shorter.)
    const refused = await call(`${name}__add`, { a: 1, b: 2 });
    expect(refused.body.isError).toBe(true);
    const text = refused.body.content?.[0]?.text ?? "";
    expect(text).toMatch(/^The server of "weather-forecast-service" now speaks MCP 2025-11-25.*refresh/);
    expect(text.length).toBeGreaterThan(200);
    const ledger = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/audit?limit=5`);
    const { entries } = (await ledger.json()) as { entries: Record<string, unknown>[] };
    const [decision, requested] = entries;
    expect(requested).toMatchObject({ connection: name, tool: "add", phase: "requested" });
    expect(decision).toMatchObject({
      connection: name,
      phase: "decision",
      decision: "denied",
      deniedBy: "protocol",
    });
    expect(decision?.reason).toBe(`${text.slice(0, 199).trimEnd()}…`);
  });

  it("records a call the server answers with a JSON-RPC error, or fails to answer, as allowed and then as thrown", async () => {
    const remote = await server();
    expect((await connect("failing", remote.url)).status).toBe(201);
    const ledger = async (n: number) => {
      const page = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/audit?limit=${n}`);
      const { entries } = (await page.json()) as { entries: Record<string, unknown>[] };
      return entries.reverse().map((e) => [e.connection, e.phase, e.decision ?? e.reason]);
    };
    await remote.control({ echoHeaders: "json-rpc-error" });
    expect((await call("failing__echo", { text: "x" })).body.content?.[0]?.text).toContain(
      "I saw your headers",
    );
    expect(await ledger(3)).toEqual([
      ["failing", "requested", undefined],
      ["failing", "decision", "allowed"],
      ["failing", "executed", "threw protocol_error"],
    ]);
    await remote.control({ echoHeaders: "http-500" });
    expect((await call("failing__echo", { text: "x" })).body.isError).toBe(true);
    expect(await ledger(3)).toEqual([
      ["failing", "requested", undefined],
      ["failing", "decision", "allowed"],
      ["failing", "executed", "threw transport_error"],
    ]);
  });

  it("records each call in the audit ledger, decisions and denials, never argument values", async () => {
    const ledger = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/audit?limit=500`);
    expect(ledger.status).toBe(200);
    const { entries } = (await ledger.json()) as { entries: Record<string, unknown>[] };
    expect(
      entries.some((e) => e.phase === "decision" && e.deniedBy === "drift" && e.connection === "fixture"),
    ).toBe(true);
    expect(entries.some((e) => e.phase === "decision" && e.deniedBy === "schema")).toBe(true);
    expect(entries.some((e) => e.phase === "executed" && typeof e.latencyMs === "number")).toBe(true);
    expect(JSON.stringify(entries)).not.toContain("evil.example");
    expect(JSON.stringify(entries)).not.toContain("hi 2026");
    expect((await instance.rest("bob", "GET", `/v1/workspaces/${ws}/audit`)).status).toBe(403);
  });

  it("a member removed cannot call a connection's tool on their next request", async () => {
    const carol = testPrincipal("carol").id;
    await addMember(instance.rest, "alice", ws, "carol", { principalId: carol });
    const client = await instance.mcpClient("carol", ws);
    expect((await client.callTool({ name: "fixture__echo", arguments: { text: "in" } })).isError).toBeFalsy();
    expect((await instance.rest("alice", "DELETE", `/v1/workspaces/${ws}/members/${carol}`)).status).toBe(
      204,
    );
    await expect(client.callTool({ name: "fixture__echo", arguments: { text: "out" } })).rejects.toThrow();
  });
});

describe("the health loops", () => {
  it("a killed server makes the connection degraded and, once back, running again with no human", async () => {
    const remote = await server();
    expect((await connect("flaky", remote.url)).status).toBe(201);
    await remote.kill();
    await time.advance(HEALTH_MS);
    await eventually(async () => expect((await view("flaky")).state).toBe("degraded"), { timeout: 10_000 });
    await remote.restart();
    for (let i = 0; i < 12 && (await view("flaky")).state !== "running"; i += 1) {
      await time.advance(HEALTH_MS * 4);
      await settle();
    }
    await eventually(async () => expect((await view("flaky")).state).toBe("running"), { timeout: 10_000 });
    expect((await call("flaky__echo", { text: "back" })).body.isError).toBeFalsy();
  });

  it("a static credential that starts answering 401 makes it reauth_required with a notification, and the transport never flaps", async () => {
    const remote = await server({ requireHeader: { name: "x-api-key", value: SECRET } });
    const created = await connect("keyed", remote.url, {
      kind: "static",
      header: "x-api-key",
      value: SECRET,
    });
    expect(created.status).toBe(201);
    const body = await created.text();
    expect(body).not.toContain(SECRET);
    expect((await call("keyed__echo", { text: "with key" })).body.isError).toBeFalsy();
    await remote.control({ reject401: true });
    await time.advance(CREDENTIAL_MS);
    await eventually(async () => expect((await view("keyed")).state).toBe("reauth_required"), {
      timeout: 10_000,
    });
    await time.advance(HEALTH_MS);
    await settle();
    expect((await view("keyed")).state).toBe("reauth_required");
    const transport = (await view("keyed")).health.transport as { outcome: string } | null;
    expect(transport?.outcome ?? "ok").toBe("ok");
    await eventually(async () => {
      const inbox = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/notifications`);
      const { notifications } = (await inbox.json()) as {
        notifications: { source: string; data?: unknown }[];
      };
      expect(notifications).toContainEqual(
        expect.objectContaining({ source: "connections", data: { connection: "keyed" } }),
      );
    });
    const refused = await call("keyed__echo", { text: "no" });
    expect(refused.body.content?.[0]?.text).toContain("has lapsed");
  });

  it("a server that echoes the credential back in a failed call: the answer and the log say what failed, never the value", async () => {
    const remote = await server({ requireHeader: { name: "x-api-key", value: SECRET } });
    const auth = { kind: "static", header: "x-api-key", value: SECRET };
    expect((await connect("echoes", remote.url, auth)).status).toBe(201);
    await remote.control({ echoHeaders: "http-500" });
    const failed = await call("echoes__echo", { text: "x" });
    expect(failed.body.isError).toBe(true);
    const logged = captured.lines.find(
      (line) => line.msg === "tool failed unexpectedly" && line.tool === "echoes__echo",
    );
    expect(JSON.stringify(logged)).toContain("HTTP 500");
    await remote.control({ echoHeaders: "json-rpc-error" });
    const told = (await call("echoes__echo", { text: "x" })).body.content?.[0]?.text;
    expect(told).toContain("I saw your headers");
    expect(told).toContain("[redacted]");
    expect(JSON.stringify([failed, told, captured.lines])).not.toContain(SECRET);
  });

  it.each(["2025-11-25", "2026-07-28"] as const)(
    "checks the credential of a %s server with a request its revision has, and records it ok",
    async (era) => {
      const remote = await server({ eras: [era], requireHeader: { name: "x-api-key", value: SECRET } });
      const name = `checked-${era.slice(0, 4)}`;
      expect(
        (await connect(name, remote.url, { kind: "static", header: "x-api-key", value: SECRET })).status,
      ).toBe(201);
      await time.advance(CREDENTIAL_MS);
      await eventually(
        async () => expect((await view(name)).health.credential).toMatchObject({ outcome: "ok" }),
        { timeout: 10_000 },
      );
      expect((await view(name)).state).toBe("running");
    },
  );

  it("never writes a credential into a response, an event or a log line", async () => {
    const everything = JSON.stringify(captured.lines);
    expect(everything).not.toContain(SECRET);
    const status = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/connections/keyed`);
    expect(await status.text()).not.toContain(SECRET);
  });
});

describe("disabling a connection", () => {
  it("takes its tools out of service and puts them back, keeping everything; only an admin may", async () => {
    const remote = await server();
    expect((await connect("pausable", remote.url)).status).toBe(201);
    expect(
      (await instance.rest("bob", "POST", `/v1/workspaces/${ws}/connections/pausable/disable`)).status,
    ).toBe(403);
    const disabled = await instance.rest(
      "alice",
      "POST",
      `/v1/workspaces/${ws}/connections/pausable/disable`,
    );
    expect(await disabled.json()).toMatchObject({ state: "disabled", snapshot: { version: 1 } });
    const client = await instance.mcpClient("alice", ws);
    expect((await client.listTools()).tools.map((t) => t.name)).not.toContain("pausable__echo");
    const refused = await call("pausable__echo", { text: "x" });
    expect(refused.body.content?.[0]?.text).toContain("Unknown tool");
    const enabled = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/connections/pausable/enable`);
    expect(await enabled.json()).toMatchObject({ state: "running" });
    expect((await call("pausable__echo", { text: "back" })).body.isError).toBeFalsy();
  });
});

describe("removing a connection", () => {
  it("takes its tools away and keeps its audit history", async () => {
    expect((await instance.rest("alice", "DELETE", `/v1/workspaces/${ws}/connections/fixture`)).status).toBe(
      204,
    );
    const client = await instance.mcpClient("alice", ws);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).not.toContain("fixture__echo");
    expect((await instance.rest("alice", "GET", `/v1/workspaces/${ws}/connections/fixture`)).status).toBe(
      404,
    );
    const ledger = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/audit?limit=500`);
    const { entries } = (await ledger.json()) as { entries: { connection: string }[] };
    expect(entries.some((e) => e.connection === "fixture")).toBe(true);
  });
});
