import { randomBytes } from "node:crypto";
import { readdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, capturingLogger, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { callTool } from "../helpers/connections.ts";
import { startConnectionsAtrium } from "../helpers/connections-atrium.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { addMember } from "../helpers/members.ts";
import { type RemoteServer, startRemoteServer } from "../helpers/remote-server.ts";

// A server that reads its credential from the URL's query (`?api_key=…`). The URL is stored in
// the connection's record and shown to every member, so a credential in it is refused and sent
// instead as a query credential: sealed like a header's value, added only when Atrium calls the
// server, and never shown, logged or stored in the clear (adr/0108).

const SECRET = `sk-${randomBytes(12).toString("hex")}`;
const time = new FakeTime(Date.now());
const captured = capturingLogger("debug");
let remote: RemoteServer;
let instance: TestAtrium;
/** alice's workspace, where bob is a member who may not manage its connections. */
let ws: string;
/** bob's own workspace, where his personal connection needs no grant. */
let solo: string;

beforeAll(async () => {
  remote = await startRemoteServer({ requireQuery: { name: "api_key", value: SECRET } });
  instance = await startConnectionsAtrium("atrium-query-credential-", time, captured.log);
  ws = await bootstrapWorkspace(instance, "alice");
  solo = await bootstrapWorkspace(instance, "bob");
  await addMember(instance.rest, "alice", ws, "bob", { principalId: testPrincipal("bob").id });
});

afterAll(async () => {
  await instance?.stop();
  await remote?.stop();
  if (instance) await rm(instance.dir, { recursive: true, force: true });
});

/** Every file under `dir`, read as text. */
async function everyFile(dir: string): Promise<string> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const texts = await Promise.all(
    entries.filter((e) => e.isFile()).map((e) => readFile(join(e.parentPath, e.name), "utf8")),
  );
  return texts.join("\n");
}

describe("a connection URL whose query carries a credential", () => {
  it.each([
    ["a workspace connection", "alice", {}],
    ["a personal connection", "bob", { personal: true }],
  ] as const)("%s: is refused with what to do, and nothing is stored", async (_, user, extra) => {
    const url = new URL(remote.url.href);
    url.searchParams.set("api_key", SECRET);
    const refused = await instance.rest(user, "POST", `/v1/workspaces/${ws}/connections`, {
      name: "keyed-in-url",
      url: url.href,
      ...extra,
    });
    expect(refused.status).toBe(400);
    const body = await refused.text();
    expect(body).toContain('\\"kind\\": \\"query\\"');
    expect(body).not.toContain(SECRET);
    const listed = await instance.rest(user, "GET", `/v1/workspaces/${ws}/connections`);
    expect(await listed.json()).toEqual({ connections: [] });
  });
});

describe("a query credential", () => {
  it.each([
    ["a workspace connection", "alice", () => ws, "searchy", {}],
    ["a personal connection", "bob", () => solo, "my_searchy", { personal: true }],
  ] as const)(
    "%s: reaches the server alone, never a member, a log line or the disk",
    async (_, user, at, source, extra) => {
      const ws = at();
      const created = await instance.rest(user, "POST", `/v1/workspaces/${ws}/connections`, {
        name: "searchy",
        url: remote.url.href,
        auth: { kind: "query", param: "api_key", value: SECRET },
        ...extra,
      });
      const added = await created.text();
      expect(created.status, added).toBe(201);
      expect(JSON.parse(added)).toMatchObject({
        url: remote.url.href,
        auth: { kind: "query", param: "api_key" },
        state: "running",
      });
      const called = await callTool(instance, ws, `${source}__echo`, { text: "with key" }, user);
      expect(called.isError).toBeFalsy();
      const shown = [
        added,
        await (await instance.rest(user, "GET", `/v1/workspaces/${ws}/connections`)).text(),
        // bob is a member of alice's workspace who may not manage its connections.
        await (await instance.rest("bob", "GET", `/v1/workspaces/${ws}/connections`)).text(),
        await (await instance.rest(user, "GET", `/v1/workspaces/${ws}/connections/${source}`)).text(),
        JSON.stringify(await callTool(instance, ws, "connections__list", {}, user)),
        JSON.stringify(await callTool(instance, ws, "connections__status", { name: source }, user)),
        await (await instance.rest(user, "GET", `/v1/workspaces/${ws}/audit?limit=500`)).text(),
        JSON.stringify(captured.lines),
        await everyFile(instance.dir),
      ];
      for (const text of shown) expect(text).not.toContain(SECRET);
    },
  );

  it("a connection to a server that wants it, made without it, is refused at its first photograph", async () => {
    const refused = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/connections`, {
      name: "keyless",
      url: remote.url.href,
    });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain("401");
  });
});
