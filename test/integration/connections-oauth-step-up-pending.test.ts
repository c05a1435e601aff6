import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.ts";
import { bootstrapWorkspace, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { callTool, connectionView } from "../helpers/connections.ts";
import { startConnectionsAtrium } from "../helpers/connections-atrium.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { addMember } from "../helpers/members.ts";
import {
  authorizeByHand,
  deliverByHand,
  goUrlIn,
  openGoUrl,
  type ScriptedOAuthServer,
  startScriptedOAuthServer,
} from "../helpers/scripted-oauth-server.ts";

// A workspace connection has one step-up at a time (flows.ts). A member's call needing another
// scope than the pending step-up asks for started a new one, which replaced the step-up an admin
// had opened and was completing at the authorization server: their callback answered Replaced.
// The pending step-up is now handed out instead, said to be waiting (ADR 0122, amended 2026-12-07).

const time = new FakeTime(Date.now());
let instance: TestAtrium;
let server: ScriptedOAuthServer;
let ws: string;

beforeAll(async () => {
  server = await startScriptedOAuthServer();
  instance = await startConnectionsAtrium(
    "atrium-connections-oauth-step-up-pending-",
    time,
    createLogger("silent"),
    {
      healthIntervalSeconds: 3600,
      credentialCheckIntervalSeconds: 86_400,
    },
  );
  ws = await bootstrapWorkspace(instance, "alice");
  await addMember(instance.rest, "alice", ws, "bob", { principalId: testPrincipal("bob").id });
});

afterAll(async () => {
  await instance?.stop();
  await server?.close();
});

/** A workspace connection granted `read`, authorized by alice. */
async function connected(name: string): Promise<void> {
  const added = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/connections`, {
    name,
    url: server.url,
    auth: { kind: "oauth", scopes: ["read"] },
  });
  expect(added.status).toBe(201);
  const { go_url } = (await added.json()) as { go_url: string };
  expect((await authorizeByHand(instance, "alice", go_url)).status).toBe(200);
}

/** Bob (a member) calls the connection's tool needing the server's step-up scope: the tool error. */
async function stepUpText(name: string): Promise<string> {
  const answer = await callTool(instance, ws, `${name}__needs_more`, {}, "bob");
  expect(answer.isError).toBe(true);
  return answer.content?.[0]?.text ?? "";
}

describe("a step-up an admin is completing", () => {
  it("is not replaced by a member's call needing another scope; once it is finished, that call steps up for the rest", async () => {
    await connected("notes");
    server.stepUpScope = "read files.write";
    const first = goUrlIn(await stepUpText("notes"));
    expect(first).toBeDefined();

    // A member's call to a tool needing another scope: the waiting link, said to be so.
    server.stepUpScope = "read calendar.read";
    const meanwhile = await stepUpText("notes");
    expect(goUrlIn(meanwhile)).toBe(first);
    expect(meanwhile).toContain('asking for scope "read files.write", not all of it, is already waiting');
    expect(meanwhile).toContain("a workspace admin must finish it first");

    // An admin opens it and consents at the authorization server, holding the answer.
    const { location, cookie } = await openGoUrl(instance, "alice", first as string);
    expect(location.searchParams.get("scope")).toBe("read files.write");
    const atServer = await fetch(location, { redirect: "manual" });
    const back = new URL(atServer.headers.get("location") ?? "");
    // The member's call again, while she does: still not replaced (opened, its link is not handed
    // out: connections-oauth-step-up-opened.test.ts).
    expect(goUrlIn(await stepUpText("notes"))).toBeUndefined();

    const landing = await deliverByHand(instance, "alice", cookie, back);
    expect(landing.status, landing.text).toBe(200);
    const view = await connectionView<{ auth: { scopes: string[] } }>(instance, ws, "notes");
    expect(view.auth.scopes).toEqual(["read", "files.write"]);

    // The member's call again: a fresh step-up for what was granted and what it needs.
    const again = await stepUpText("notes");
    const second = goUrlIn(again);
    expect(second).toBeDefined();
    expect(second).not.toBe(first);
    expect(again).not.toContain("already waiting");
    const opened = await openGoUrl(instance, "alice", second as string);
    expect(opened.location.searchParams.get("scope")).toBe("read files.write calendar.read");
  });

  it("is handed out as it is to a call needing no more than it asks for", async () => {
    await connected("drive");
    server.stepUpScope = "read files.write calendar.read contacts.read";
    const wide = goUrlIn(await stepUpText("drive"));
    server.stepUpScope = "read contacts.read";
    const narrower = await stepUpText("drive");
    expect(goUrlIn(narrower)).toBe(wide);
    expect(narrower).not.toContain("already waiting");
    expect((await authorizeByHand(instance, "alice", wide as string)).status).toBe(200);
    expect((await callTool(instance, ws, "drive__needs_more", {}, "bob")).isError).toBeFalsy();
  });
});
