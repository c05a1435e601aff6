import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.ts";
import { bootstrapWorkspace, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { callTool } from "../helpers/connections.ts";
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

// A pending step-up is handed out to every step-up of its connection, never replaced (ADR 0122,
// amended 2026-12-07), but it opens only in the browser that opened it first. Handing that link to
// another admin sent them to a 403 saying to "start a new one", which no call could do for ten
// minutes: a call is now told it is being completed elsewhere and where a sign-in of one's own
// starts (`…/oauth/start`, a per-person flow), and that sign-in goes through.

const time = new FakeTime(Date.now());
let instance: TestAtrium;
let server: ScriptedOAuthServer;
let ws: string;

beforeAll(async () => {
  server = await startScriptedOAuthServer();
  instance = await startConnectionsAtrium(
    "atrium-connections-oauth-step-up-opened-",
    time,
    createLogger("silent"),
    {
      healthIntervalSeconds: 3600,
      credentialCheckIntervalSeconds: 86_400,
    },
  );
  ws = await bootstrapWorkspace(instance, "alice");
  await addMember(instance.rest, "alice", ws, "carol", { principalId: testPrincipal("carol").id }, "admin");
});

afterAll(async () => {
  await instance?.stop();
  await server?.close();
});

/** A workspace connection granted `read`, authorized by alice; then alice's call needing `read files.write` steps up, and she opens that link. */
async function stepUpOpenedByAlice(name: string): Promise<{ link: string; cookie: string; back: URL }> {
  const added = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/connections`, {
    name,
    url: server.url,
    auth: { kind: "oauth", scopes: ["read"] },
  });
  expect(added.status).toBe(201);
  const { go_url } = (await added.json()) as { go_url: string };
  expect((await authorizeByHand(instance, "alice", go_url)).status).toBe(200);
  server.stepUpScope = "read files.write";
  const link = goUrlIn((await callTool(instance, ws, `${name}__needs_more`, {}, "alice")).content?.[0]?.text);
  expect(link).toBeDefined();
  const { location, cookie } = await openGoUrl(instance, "alice", link as string);
  const atServer = await fetch(location, { redirect: "manual" });
  return { link: link as string, cookie, back: new URL(atServer.headers.get("location") ?? "") };
}

describe("a step-up already opened in a browser", () => {
  it("is not handed to another admin's call, which is told where to start a sign-in of their own, and that sign-in completes", async () => {
    const alice = await stepUpOpenedByAlice("notes");

    server.stepUpScope = "read calendar.read";
    const answer = await callTool(instance, ws, "notes__needs_more", {}, "carol");
    expect(answer.isError).toBe(true);
    const told = answer.content?.[0]?.text ?? "";
    expect(goUrlIn(told)).toBeUndefined();
    expect(told).toContain("already opened in a browser and is being completed there, until ");
    const start = `/v1/workspaces/${ws}/connections/notes/oauth/start`;
    expect(told).toContain(`${start} with {"scopes":["read","calendar.read"]}`);

    // What the message names works: carol's own sign-in is not the step-up's slot.
    const started = await instance.rest("carol", "POST", start, { scopes: ["read", "calendar.read"] });
    expect(started.status).toBe(200);
    const { go_url } = (await started.json()) as { go_url: string };
    expect((await authorizeByHand(instance, "carol", go_url)).status).toBe(200);
    expect((await callTool(instance, ws, "notes__needs_more", {}, "carol")).isError).toBeFalsy();

    // Alice's step-up, begun before carol's activation, can only be superseded.
    expect((await deliverByHand(instance, "alice", alice.cookie, alice.back)).status).toBe(409);
  });

  it("is not handed out even to a call needing no more than it asks for", async () => {
    await stepUpOpenedByAlice("drive");
    const told = (await callTool(instance, ws, "drive__needs_more", {}, "carol")).content?.[0]?.text ?? "";
    expect(goUrlIn(told)).toBeUndefined();
    expect(told).toContain(
      `/v1/workspaces/${ws}/connections/drive/oauth/start with {"scopes":["read","files.write"]}`,
    );
  });

  it("answers another browser's go_url with where to start a sign-in of one's own, not a bare 'start a new one'", async () => {
    const { link } = await stepUpOpenedByAlice("docs");
    const opened = await instance.raw("carol", "GET", new URL(link).pathname);
    expect(opened.status).toBe(403);
    expect(opened.text).not.toContain("start a new one");
    expect(opened.text).toContain(`/v1/workspaces/${ws}/connections/docs/oauth/start`);
    expect(opened.text).toContain("connections__authorize");
  });
});
