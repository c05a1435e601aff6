import { randomBytes } from "node:crypto";
import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_PERSONAL_CONNECTIONS } from "../../src/platform/connections/personal-cap.ts";
import type { Source } from "../../src/sources/source.ts";
import { NO_CALLER } from "../../src/workspace/access-check.ts";
import { bootstrapWorkspace, capturingLogger, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { startConnectionsAtrium } from "../helpers/connections-atrium.ts";
import { eventually } from "../helpers/eventually.ts";
import { FakeTime, settle } from "../helpers/fake-time.ts";
import { MCP_ERAS } from "../helpers/mcp-eras.ts";
import { addMember } from "../helpers/members.ts";
import { type RemoteServer, startRemoteServer } from "../helpers/remote-server.ts";

// Personal connections (ADR 0042) over real HTTP, against a real MCP server in a child process on
// 127.0.0.1 that demands a static key: a member's own connection, served to them alone as
// my_<name>, acting in a shared workspace only with an admin's grant, and stopped by the owner's
// leaving or deactivation on the next use.

const SECRET = `s3cret-${randomBytes(8).toString("hex")}`;
const CREDENTIAL_MS = 60_000;
const time = new FakeTime(Date.now());
const captured = capturingLogger("debug");
const bob = testPrincipal("bob").id;
const carol = testPrincipal("carol").id;
let instance: TestAtrium;
let remote: RemoteServer;
/** bob's own workspace: he is its only member. */
let solo: string;
/** alice's workspace, where bob is a member. */
let shared: string;

type ToolResult = { isError?: boolean; content?: { text: string }[] };

function rest(user: string, method: string, path: string, body?: Record<string, unknown>) {
  return instance.rest(user, method, path, body);
}

async function call(
  user: string,
  ws: string,
  name: string,
  text = "hi",
): Promise<ToolResult & { status: number }> {
  const response = await rest(user, "POST", `/v1/workspaces/${ws}/tools/call`, { name, arguments: { text } });
  return { status: response.status, ...((await response.json()) as ToolResult) };
}

function addPersonal(user: string, ws: string, name: string, extra: Record<string, unknown> = {}) {
  return rest(user, "POST", `/v1/workspaces/${ws}/connections`, {
    personal: true,
    name,
    url: remote.url.href,
    auth: { kind: "static", header: "x-api-key", value: SECRET },
    ...extra,
  });
}

async function echoCalls(): Promise<number> {
  return (await remote.calls()).filter((c) => c.name === "echo").length;
}

/** Status and body, with the name it was asked about replaced, for "answers as if absent". */
async function answer(response: Response, name: string) {
  return { status: response.status, body: (await response.text()).replaceAll(name, "<name>") };
}

function credentialFile(owner: string): string {
  return join(
    instance.root,
    "_instance",
    "users",
    owner,
    "connections",
    "servers",
    "my_notes",
    "credential.json",
  );
}

async function lastCredentialCheck(owner: string): Promise<string | undefined> {
  const health = JSON.parse(await readFile(credentialFile(owner), "utf8")) as { last?: { at: string } };
  return health.last?.at;
}

beforeAll(async () => {
  remote = await startRemoteServer({ requireHeader: { name: "x-api-key", value: SECRET } });
  instance = await startConnectionsAtrium("atrium-personal-", time, captured.log, {
    credentialCheckIntervalSeconds: CREDENTIAL_MS / 1000,
  });
  solo = await bootstrapWorkspace(instance, "bob");
  shared = await bootstrapWorkspace(instance, "alice");
  await bootstrapWorkspace(instance, "orgadmin-olga");
  await addMember(instance.rest, "alice", shared, "bob", { principalId: bob });
});

afterAll(async () => {
  await instance?.stop();
  await remote?.stop();
  if (instance) await rm(instance.dir, { recursive: true, force: true });
});

describe("a member's own connection", () => {
  it("any member adds one; it is served to them as my_<name> and works where they are the only member", async () => {
    const created = await addPersonal("bob", solo, "notes");
    expect(created.status).toBe(201);
    const text = await created.text();
    expect(text).not.toContain(SECRET);
    expect(JSON.parse(text)).toMatchObject({
      name: "my_notes",
      personal: true,
      grant: "not_needed",
      state: "running",
      snapshot: { version: 1, tools: ["add", "echo", "write"] },
    });
    for (const era of MCP_ERAS) {
      const client = await instance.mcpClient("bob", solo, { era });
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(["my_notes__echo", "my_notes__add"]));
      const result = await client.callTool({ name: "my_notes__echo", arguments: { text: `mine ${era}` } });
      expect(result.isError).toBeFalsy();
      expect(JSON.stringify(result.content)).toContain(`mine ${era}`);
    }
    // Stored under its owner, not in the workspace.
    expect(await lastCredentialCheck(bob)).toBeUndefined();
  });

  it("is invisible to a workspace admin: every route, tool and listing answers as for one that does not exist", async () => {
    const callsBefore = await echoCalls();
    const base = `/v1/workspaces/${shared}/connections`;
    const asked: [string, string, Record<string, unknown>?][] = [
      ["GET", "/NAME"],
      ["GET", "/NAME/tools"],
      ["GET", "/NAME/tools/snapshots"],
      ["GET", "/NAME/tools/snapshots/1"],
      ["POST", "/NAME/tools/refresh"],
      ["POST", "/NAME/disable"],
      ["POST", "/NAME/enable"],
      ["DELETE", "/NAME"],
    ];
    for (const [method, path] of asked) {
      const held = await answer(
        await rest("alice", method, base + path.replace("NAME", "my_notes")),
        "my_notes",
      );
      const absent = await answer(
        await rest("alice", method, base + path.replace("NAME", "my_nobody")),
        "my_nobody",
      );
      expect(held, `${method} ${path}`).toEqual(absent);
      expect(held.status).toBe(404);
    }
    const listed = (await (await rest("alice", "GET", base)).json()) as { connections: { name: string }[] };
    expect(listed.connections.map((c) => c.name)).not.toContain("my_notes");
    const tools = (await (await rest("alice", "GET", `/v1/workspaces/${shared}/tools`)).json()) as {
      tools: { name: string }[];
    };
    expect(tools.tools.filter((t) => t.name.startsWith("my_"))).toEqual([]);
    const client = await instance.mcpClient("alice", shared);
    expect((await client.listTools()).tools.filter((t) => t.name.startsWith("my_"))).toEqual([]);
    const heldCall = await client.callTool({ name: "my_notes__echo", arguments: { text: "x" } });
    const absentCall = await client.callTool({ name: "my_nobody__echo", arguments: { text: "x" } });
    expect(heldCall.isError).toBe(true);
    expect(JSON.stringify(heldCall).replaceAll("my_notes", "<name>")).toBe(
      JSON.stringify(absentCall).replaceAll("my_nobody", "<name>"),
    );
    const status = await client.callTool({ name: "connections__status", arguments: { name: "my_notes" } });
    const statusAbsent = await client.callTool({
      name: "connections__status",
      arguments: { name: "my_nobody" },
    });
    expect(JSON.stringify(status).replaceAll("my_notes", "<name>")).toBe(
      JSON.stringify(statusAbsent).replaceAll("my_nobody", "<name>"),
    );
    expect(await echoCalls()).toBe(callsBefore);
    // Still bob's, untouched by alice's DELETE and disable.
    expect((await call("bob", solo, "my_notes__echo")).isError).toBeFalsy();
  });
});

describe("in a shared workspace", () => {
  it("is listed to its owner as needing a grant and refused, with what to do, until an admin grants it", async () => {
    const listed = (await (await rest("bob", "GET", `/v1/workspaces/${shared}/connections`)).json()) as {
      connections: { name: string; state: string; grant?: string }[];
    };
    expect(listed.connections).toContainEqual(
      expect.objectContaining({ name: "my_notes", state: "needs_grant", grant: "needed" }),
    );
    const before = await echoCalls();
    const refused = await call("bob", shared, "my_notes__echo");
    expect(refused.isError).toBe(true);
    expect(refused.content?.[0]?.text).toContain("grant");
    expect(refused.content?.[0]?.text).toContain("connections__grant");
    expect(await echoCalls()).toBe(before);
  });

  it("works once granted (the admin sees the grant and its holder, never the credential), and stops when revoked", async () => {
    const client = await instance.mcpClient("alice", shared);
    const granted = await client.callTool({
      name: "connections__grant",
      arguments: { principalId: bob, connection: "my_notes" },
    });
    expect(granted.isError).toBeFalsy();
    const seen = await rest("alice", "GET", `/v1/workspaces/${shared}/connections/grants`);
    const text = await seen.text();
    expect(JSON.parse(text)).toEqual({
      grants: [
        expect.objectContaining({
          principalId: bob,
          connection: "my_notes",
          grantedBy: testPrincipal("alice").id,
        }),
      ],
    });
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(remote.url.host);
    const works = await call("bob", shared, "my_notes__echo", "granted");
    expect(works.isError).toBeFalsy();
    expect(JSON.stringify(works.content)).toContain("granted");
    const view = await rest("bob", "GET", `/v1/workspaces/${shared}/connections/my_notes`);
    expect(await view.json()).toMatchObject({ state: "running", grant: "granted" });

    const revoked = await rest(
      "alice",
      "DELETE",
      `/v1/workspaces/${shared}/connections/grants/${bob}/my_notes`,
    );
    expect(revoked.status).toBe(204);
    const before = await echoCalls();
    const refused = await call("bob", shared, "my_notes__echo");
    expect(refused.isError).toBe(true);
    expect(refused.content?.[0]?.text).toContain("grant");
    expect(await echoCalls()).toBe(before);
  });

  it("an admin reading the ledger sees who called a personal connection's tool, when and how long, never its result's digest or size", async () => {
    const grants = `/v1/workspaces/${shared}/connections/grants`;
    expect((await rest("alice", "POST", grants, { principalId: bob, connection: "my_notes" })).status).toBe(
      201,
    );
    try {
      expect((await call("bob", shared, "my_notes__echo", "bob's private words")).isError).toBeFalsy();
      const audit = (await (await rest("alice", "GET", `/v1/workspaces/${shared}/audit`)).json()) as {
        entries: Record<string, unknown>[];
      };
      const executed = audit.entries.find((e) => e.connection === "my_notes" && e.phase === "executed");
      expect(executed).toMatchObject({ principalId: bob, tool: "echo", isError: false });
      expect(executed?.latencyMs).toEqual(expect.any(Number));
      expect(executed).not.toHaveProperty("resultDigest");
      expect(executed).not.toHaveProperty("resultBytes");
    } finally {
      expect((await rest("alice", "DELETE", `${grants}/${bob}/my_notes`)).status).toBe(204);
    }
  });

  it("the owner removed from the workspace: the next call fails closed, audited, and the grant ends", async () => {
    const granted = await rest("alice", "POST", `/v1/workspaces/${shared}/connections/grants`, {
      principalId: bob,
      connection: "my_notes",
    });
    expect(granted.status).toBe(201);
    expect((await call("bob", shared, "my_notes__echo")).isError).toBeFalsy();
    // A source already in hand (a call on its way when the removal lands) is refused too.
    const held = await instance.atrium.registries.use(shared, async (registry) =>
      registry.get("my_notes", bob),
    );
    expect(held).toBeDefined();
    expect((await rest("alice", "DELETE", `/v1/workspaces/${shared}/members/${bob}`)).status).toBe(204);
    const before = await echoCalls();
    expect((await call("bob", shared, "my_notes__echo")).status).toBe(404);
    const inFlight = await (held as Source).callTool(
      "echo",
      { text: "late" },
      { principalId: bob, workspaceId: shared, access: NO_CALLER },
    );
    expect(inFlight.isError).toBe(true);
    expect(JSON.stringify(inFlight.content)).toContain("no longer a member");
    expect(await echoCalls()).toBe(before);
    expect(
      await instance.atrium.registries.use(shared, async (registry) => registry.get("my_notes", bob)),
    ).toBeUndefined();
    const audit = (await (await rest("alice", "GET", `/v1/workspaces/${shared}/audit`)).json()) as {
      entries: { connection: string; decision?: string; deniedBy?: string }[];
    };
    expect(audit.entries).toContainEqual(
      expect.objectContaining({ connection: "my_notes", decision: "denied", deniedBy: "membership" }),
    );
    const grants = (await (
      await rest("alice", "GET", `/v1/workspaces/${shared}/connections/grants`)
    ).json()) as {
      grants: unknown[];
    };
    expect(grants.grants).toEqual([]);
    // Still his own where he is a member.
    expect((await call("bob", solo, "my_notes__echo")).isError).toBeFalsy();
  });
});

describe("a lapsed credential", () => {
  it("makes it reauth_required and tells its owner alone, in each workspace they are in", async () => {
    const mail = await startRemoteServer({ requireHeader: { name: "x-api-key", value: SECRET } });
    try {
      await addMember(instance.rest, "alice", shared, "bob", { principalId: bob });
      const created = await rest("bob", "POST", `/v1/workspaces/${solo}/connections`, {
        personal: true,
        name: "mail",
        url: mail.url.href,
        auth: { kind: "static", header: "x-api-key", value: SECRET },
      });
      expect(created.status).toBe(201);
      await mail.control({ reject401: true });
      await time.advance(CREDENTIAL_MS);
      await eventually(async () => {
        const view = await rest("bob", "GET", `/v1/workspaces/${solo}/connections/my_mail`);
        expect(await view.json()).toMatchObject({ state: "reauth_required" });
      });
      const entry = expect.objectContaining({
        source: "connections",
        to: bob,
        data: { connection: "my_mail" },
      });
      for (const ws of [solo, shared]) {
        await eventually(async () => {
          const inbox = await rest("bob", "GET", `/v1/workspaces/${ws}/notifications`);
          expect(((await inbox.json()) as { notifications: unknown[] }).notifications).toContainEqual(entry);
        });
      }
      const alices = await rest("alice", "GET", `/v1/workspaces/${shared}/notifications`);
      expect(JSON.stringify(await alices.json())).not.toContain("my_mail");
      const refused = await call("bob", solo, "my_mail__echo");
      expect(refused.content?.[0]?.text).toContain("has lapsed");
      expect((await rest("bob", "DELETE", `/v1/workspaces/${solo}/connections/my_mail`)).status).toBe(204);
    } finally {
      await mail.stop();
    }
  });
});

describe("the owner deactivated", () => {
  it("a call without a request (a task run) fails closed, and the credential loop leaves the connection alone", async () => {
    await bootstrapWorkspace(instance, "carol");
    const carolsWs = (await (await rest("carol", "GET", "/v1/bootstrap")).json()) as {
      workspaces: { id: string }[];
    };
    expect((await addPersonal("carol", carolsWs.workspaces[0]?.id ?? "", "notes")).status).toBe(201);
    // Both owners active: one pass of the credential loop looks at both connections. Bob's may
    // hold a check from an earlier pass already: wait for this pass's own, or it could land
    // after it is read below (owners are checked in parallel lanes).
    const bobBefore = await lastCredentialCheck(bob);
    await time.advance(CREDENTIAL_MS);
    await eventually(async () => {
      expect(await lastCredentialCheck(bob)).toBeDefined();
      expect(await lastCredentialCheck(bob)).not.toBe(bobBefore);
      expect(await lastCredentialCheck(carol)).toBeDefined();
    });
    const bobChecked = await lastCredentialCheck(bob);
    const carolChecked = await lastCredentialCheck(carol);

    expect((await rest("orgadmin-olga", "POST", `/v1/users/${bob}/deactivate`)).status).toBe(200);
    const before = await echoCalls();
    const refused = await instance.atrium.dispatch.call(
      { principalId: bob, workspaceId: solo },
      "my_notes__echo",
      { text: "after" },
      { requestId: "8d1f7c4e-0000-4000-8000-00000000d1ed" },
    );
    expect(refused.isError).toBe(true);
    expect(JSON.stringify(refused.content)).toContain("deactivated");
    expect(await echoCalls()).toBe(before);

    // The next pass checks carol's (after bob's, in the order they were added) and skips bob's.
    await time.advance(CREDENTIAL_MS);
    await eventually(async () => expect(await lastCredentialCheck(carol)).not.toBe(carolChecked));
    await settle();
    expect(await lastCredentialCheck(bob)).toBe(bobChecked);
  });
});

describe("bad inputs", () => {
  it("names: my_ is refused for a workspace connection and for a personal one's own name; the route word grants is refused", async () => {
    const workspace = await rest("alice", "POST", `/v1/workspaces/${shared}/connections`, {
      name: "my_tools",
      url: remote.url.href,
    });
    expect(workspace.status).toBe(400);
    expect(await workspace.text()).toContain("for personal connections");
    const doubled = await addPersonal("alice", shared, "my_notes");
    expect(doubled.status).toBe(400);
    expect(await doubled.text()).toContain('without \\"my_\\"');
    const upper = await addPersonal("alice", shared, "Notes");
    expect(upper.status).toBe(400);
    const grantsName = await rest("alice", "POST", `/v1/workspaces/${shared}/connections`, {
      name: "grants",
      url: remote.url.href,
    });
    expect(grantsName.status).toBe(400);
    const notBoolean = await addPersonal("alice", shared, "notes", { personal: "yes" });
    expect(notBoolean.status).toBe(400);
    expect(await notBoolean.text()).toContain('\\"personal\\"');
  });

  it("grants: only an admin grants or revokes, only to a member, only a my_ name; a grant that is not there is 404", async () => {
    await addMember(instance.rest, "alice", shared, "dave", { principalId: testPrincipal("dave").id });
    const byMember = await rest("dave", "POST", `/v1/workspaces/${shared}/connections/grants`, {
      principalId: testPrincipal("dave").id,
      connection: "my_notes",
    });
    expect(byMember.status).toBe(403);
    const nonMember = await rest("alice", "POST", `/v1/workspaces/${shared}/connections/grants`, {
      principalId: carol,
      connection: "my_notes",
    });
    expect(nonMember.status).toBe(400);
    expect(await nonMember.text()).toContain("not a member");
    const badId = await rest("alice", "POST", `/v1/workspaces/${shared}/connections/grants`, {
      principalId: "carol",
      connection: "my_notes",
    });
    expect(badId.status).toBe(400);
    const badName = await rest("alice", "POST", `/v1/workspaces/${shared}/connections/grants`, {
      principalId: testPrincipal("dave").id,
      connection: "notes",
    });
    expect(badName.status).toBe(400);
    const revokeByMember = await rest(
      "dave",
      "DELETE",
      `/v1/workspaces/${shared}/connections/grants/${testPrincipal("dave").id}/my_notes`,
    );
    expect(revokeByMember.status).toBe(403);
    const missing = await rest(
      "alice",
      "DELETE",
      `/v1/workspaces/${shared}/connections/grants/${testPrincipal("dave").id}/my_notes`,
    );
    expect(missing.status).toBe(404);
    // Nothing was written by any of them.
    const grants = (await (
      await rest("alice", "GET", `/v1/workspaces/${shared}/connections/grants`)
    ).json()) as {
      grants: unknown[];
    };
    expect(grants.grants).toEqual([]);
    // A member may make their own connection, never the workspace's.
    const workspaceByMember = await rest("dave", "POST", `/v1/workspaces/${shared}/connections`, {
      name: "tools",
      url: remote.url.href,
    });
    expect(workspaceByMember.status).toBe(403);
  });

  it("never writes the credential into a response, an event or a log line", () => {
    expect(JSON.stringify(captured.lines)).not.toContain(SECRET);
  });
});

describe("coming back", () => {
  it("a grant left from an earlier membership does not block a new one: granting again answers 201 and it works", async () => {
    const frank = testPrincipal("frank").id;
    const ws = await bootstrapWorkspace(instance, "erin");
    await addMember(instance.rest, "erin", ws, "frank", { principalId: frank });
    expect((await addPersonal("frank", ws, "notes")).status).toBe(201);
    const grant = () =>
      rest("erin", "POST", `/v1/workspaces/${ws}/connections/grants`, {
        principalId: frank,
        connection: "my_notes",
      });
    expect((await grant()).status).toBe(201);
    const file = join(instance.root, ws, "connections", "grants.json");
    const earlier = await readFile(file, "utf8");
    expect((await rest("erin", "DELETE", `/v1/workspaces/${ws}/members/${frank}`)).status).toBe(204);
    await eventually(async () => expect(await readFile(file, "utf8")).not.toBe(earlier));
    // The tidy on leaving never ran (a crash between the removal and its handler): the old grant stays.
    await writeFile(file, earlier);
    time.jump(1000); // he comes back a second later, so the old grant predates his membership
    await addMember(instance.rest, "erin", ws, "frank", { principalId: frank });
    expect((await call("frank", ws, "my_notes__echo")).isError).toBe(true);
    const again = await grant();
    expect(again.status).toBe(201);
    const { grant: made } = (await again.json()) as { grant: { grantedAt: string } };
    expect(made.grantedAt > JSON.parse(earlier).grants[0].grantedAt).toBe(true);
    const listed = (await (await rest("erin", "GET", `/v1/workspaces/${ws}/connections/grants`)).json()) as {
      grants: unknown[];
    };
    expect(listed.grants).toEqual([made]);
    expect((await call("frank", ws, "my_notes__echo")).isError).toBeFalsy();
  });
});

describe("limits", () => {
  it("a person holds at most MAX_PERSONAL_CONNECTIONS: past it, 409 personal_connections_full, also for adds made at once", async () => {
    const ws = await bootstrapWorkspace(instance, "gina");
    const adds = await Promise.all(
      Array.from({ length: MAX_PERSONAL_CONNECTIONS + 1 }, (_, i) => addPersonal("gina", ws, `n${i}`)),
    );
    const statuses = adds.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(MAX_PERSONAL_CONNECTIONS);
    expect(statuses.filter((s) => s === 409)).toHaveLength(1);
    const refused = await addPersonal("gina", ws, "one-more");
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({ error: { code: "personal_connections_full" } });
    const held = adds.findIndex((r) => r.status === 201);
    expect((await rest("gina", "DELETE", `/v1/workspaces/${ws}/connections/my_n${held}`)).status).toBe(204);
    expect((await addPersonal("gina", ws, "one-more")).status).toBe(201);
  }, 60_000);
});
