import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { journalDuring } from "../helpers/fs-journal.ts";
import { addMember, invite } from "../helpers/members.ts";
import { mcpPost, obtainTokens } from "../helpers/oauth.ts";
import { SseReader } from "../helpers/sse.ts";

// A deactivation writes the person's profile.json, renaming the new file into place, then flushes
// the person's folder. When that flush failed, the profile on disk said deactivated, but the
// directory's memory, which every request's check reads, still said active, and the route answered
// 500 before ending the person's grants, sent invitations and event streams: the person went on
// working until a restart, and once reactivated their old invitations could be accepted (ADR 0148).

let t: TestAtrium;
let ws: string;
const bob = testPrincipal("bob");
const carol = testPrincipal("carol");
const dave = testPrincipal("dave");
const listTools = { jsonrpc: "2.0", id: 1, method: "tools/list" };
const rest = (...args: Parameters<TestAtrium["rest"]>) => t.rest(...args);

beforeAll(async () => {
  t = await startTestAtrium();
  await t.rest("orgadmin-olga", "GET", "/v1/workspaces");
  ws = await bootstrapWorkspace(t, "alice");
  for (const name of ["bob", "carol", "dave"]) await t.rest(name, "GET", "/v1/workspaces");
});

afterAll(async () => {
  await t?.stop();
});

const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });

/** `work` with every flush of the person's own folder failing, as a disk's error does. */
const withPersonFlushFailing = (principalId: string, work: () => Promise<unknown>) =>
  journalDuring(work, {
    sync: (path) => (path === join(t.root, "_instance", "users", principalId) ? eio() : undefined),
  });

/** The org admin deactivates or reactivates `principalId` while its folder's flush fails. */
async function setActiveFlushFailing(principalId: string, action: "deactivate" | "reactivate") {
  let response: Response | undefined;
  await withPersonFlushFailing(principalId, async () => {
    response = await t.rest("orgadmin-olga", "POST", `/v1/users/${principalId}/${action}`);
  });
  if (!response) throw new Error("no answer");
  return { status: response.status, profile: (await response.json()) as { deactivatedAt?: string } };
}

const accept = async (name: string, id: string) =>
  (await t.rest(name, "POST", `/v1/invitations/${id}/accept`)).status;

describe("a deactivation whose profile write lands but whose folder flush fails", () => {
  it("is 200, and the person is refused from then on: requests, grants, open streams", async () => {
    await addMember(rest, "alice", ws, "bob", { principalId: bob.id });
    const tokens = await obtainTokens(t, "bob", ws);
    expect((await mcpPost(t, ws, tokens.access_token, listTools)).status).toBe(200);
    const events = await t.rest("bob", "GET", `/v1/workspaces/${ws}/events`);
    expect(events.status).toBe(200);
    const stream = new SseReader(events);
    await stream.next();

    const { status, profile } = await setActiveFlushFailing(bob.id, "deactivate");
    expect(status).toBe(200);
    expect(profile.deactivatedAt).toEqual(expect.any(String));
    expect((await t.rest("bob", "GET", "/v1/workspaces")).status).toBe(403);
    expect(t.atrium.users.isDeactivated(bob.id)).toBe(true);
    expect(await t.atrium.oauth.grants.listFor(bob.id)).toEqual([]);
    expect(await stream.rest()).toEqual([]);

    const reactivated = await t.rest("orgadmin-olga", "POST", `/v1/users/${bob.id}/reactivate`);
    expect(reactivated.status).toBe(200);
    expect((await t.rest("bob", "GET", "/v1/workspaces")).status).toBe(200);
  });

  it("ends the invitations they sent: reactivated, they are not back", async () => {
    await addMember(rest, "alice", ws, "carol", { principalId: carol.id }, "admin");
    const carols = await invite(rest, "carol", ws, { principalId: dave.id });
    expect((await setActiveFlushFailing(carol.id, "deactivate")).status).toBe(200);

    expect((await t.rest("orgadmin-olga", "POST", `/v1/users/${carol.id}/reactivate`)).status).toBe(200);
    expect(await accept("dave", carols.id)).toBe(404);
    expect(t.atrium.workspaces.roleOf(ws, dave.id)).toBeUndefined();
  });
});

describe("a reactivation whose profile write lands but whose folder flush fails", () => {
  it("is 200, and the person is let in again", async () => {
    const erin = testPrincipal("erin");
    expect((await t.rest("erin", "GET", "/v1/workspaces")).status).toBe(200);
    expect((await t.rest("orgadmin-olga", "POST", `/v1/users/${erin.id}/deactivate`)).status).toBe(200);

    const { status, profile } = await setActiveFlushFailing(erin.id, "reactivate");
    expect(status).toBe(200);
    expect(profile.deactivatedAt).toBeUndefined();
    expect((await t.rest("erin", "GET", "/v1/workspaces")).status).toBe(200);
  });
});

describe("a deactivation whose grants' revocation fails", () => {
  it("is 500, and still ends the invitations they sent and their open streams", async () => {
    const gina = testPrincipal("gina");
    await t.rest("gina", "GET", "/v1/workspaces");
    await addMember(rest, "alice", ws, "gina", { principalId: gina.id }, "admin");
    await obtainTokens(t, "gina", ws);
    const ginas = await invite(rest, "gina", ws, { principalId: dave.id });
    const events = await t.rest("gina", "GET", `/v1/workspaces/${ws}/events`);
    const stream = new SseReader(events);
    await stream.next();
    const families = join(t.root, "_instance", "oauth", "families");
    let status = 0;
    await journalDuring(
      async () => {
        status = (await t.rest("orgadmin-olga", "POST", `/v1/users/${gina.id}/deactivate`)).status;
      },
      { sync: (path) => (path.startsWith(`${families}/`) ? eio() : undefined) },
    );
    // Before, the revocations ran in turn: the grants' failure skipped the rest.
    expect(status).toBe(500);
    expect((await t.rest("orgadmin-olga", "POST", `/v1/users/${gina.id}/reactivate`)).status).toBe(200);
    expect(await accept("dave", ginas.id)).toBe(404);
    expect(await stream.rest()).toEqual([]);
  });
});
