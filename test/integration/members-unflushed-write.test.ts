import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { capturingLogger, startTestAtrium, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { journalDuring } from "../helpers/fs-journal.ts";
import { addMember, invite } from "../helpers/members.ts";
import { mcpPost, obtainTokens, refreshTokens, type Tokens } from "../helpers/oauth.ts";

// A removal or a demotion writes workspace.json, renaming the new file into place, then flushes
// its folder. When that flush failed, the change was on disk and in the index (ADR 0138), but
// the route answered 500 before ending what goes with it: the removed member's grants and the
// invitations they, or a demoted admin, had sent. Once they were back (re-added, promoted), their
// old access token worked without a new consent and their old invitations could be accepted
// (ADR 0148).

let t: TestAtrium;
const captured = capturingLogger("error");
const bob = testPrincipal("bob");
const carol = testPrincipal("carol");
const dave = testPrincipal("dave");
const listTools = { jsonrpc: "2.0", id: 1, method: "tools/list" };
const rest = (...args: Parameters<TestAtrium["rest"]>) => t.rest(...args);

beforeAll(async () => {
  t = await startTestAtrium({ log: captured.log });
  for (const name of ["alice", "bob", "carol", "dave"]) await t.rest(name, "GET", "/v1/workspaces");
});

afterAll(async () => {
  await t?.stop();
});

const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });

/** `work` with every flush of the workspace's folder failing, as a disk's error does. */
const withFolderFlushFailing = (ws: string, work: () => Promise<unknown>) =>
  journalDuring(work, { sync: (path) => (path === join(t.root, ws) ? eio() : undefined) });

async function newWorkspace(): Promise<string> {
  const created = await t.rest("alice", "POST", "/v1/workspaces", { name: "Alice's team" });
  return ((await created.json()) as { id: string }).id;
}

async function bobConnects(ws: string): Promise<Tokens & { clientId: string }> {
  await addMember(rest, "alice", ws, "bob", { principalId: bob.id });
  const tokens = await obtainTokens(t, "bob", ws);
  expect((await mcpPost(t, ws, tokens.access_token, listTools)).status).toBe(200);
  return tokens;
}

const removeAs = async (by: string, ws: string, who: string) =>
  (await t.rest(by, "DELETE", `/v1/workspaces/${ws}/members/${who}`)).status;
const setRole = async (ws: string, who: string, role: "admin" | "member") =>
  (await t.rest("alice", "PATCH", `/v1/workspaces/${ws}/members/${who}`, { role })).status;
const accept = async (name: string, id: string) =>
  (await t.rest(name, "POST", `/v1/invitations/${id}/accept`)).status;
const liveGrantsOf = async (principalId: string, ws: string) =>
  (await t.atrium.oauth.grants.listFor(principalId)).filter((grant) => grant.workspaceId === ws);

describe("a removal whose write lands but whose folder flush fails", () => {
  it("is 204, and ends the member's grants there: re-added, their old access token is refused", async () => {
    const ws = await newWorkspace();
    const tokens = await bobConnects(ws);
    let status = 0;
    await withFolderFlushFailing(ws, async () => {
      status = await removeAs("alice", ws, bob.id);
    });
    expect(status).toBe(204);
    expect(t.atrium.workspaces.roleOf(ws, bob.id)).toBeUndefined();
    expect(await liveGrantsOf(bob.id, ws)).toEqual([]);

    await addMember(rest, "alice", ws, "bob", { principalId: bob.id });
    expect((await mcpPost(t, ws, tokens.access_token, listTools)).status).toBe(401);
  });

  it("leaving yourself so is 204 too, and ends your grants there", async () => {
    const ws = await newWorkspace();
    await bobConnects(ws);
    let status = 0;
    await withFolderFlushFailing(ws, async () => {
      status = await removeAs("bob", ws, bob.id);
    });
    expect(status).toBe(204);
    expect(await liveGrantsOf(bob.id, ws)).toEqual([]);
  });

  it("ends the invitations the removed admin sent: re-added as admin, they are not back", async () => {
    const ws = await newWorkspace();
    await addMember(rest, "alice", ws, "carol", { principalId: carol.id }, "admin");
    const carols = await invite(rest, "carol", ws, { principalId: dave.id });
    let status = 0;
    await withFolderFlushFailing(ws, async () => {
      status = await removeAs("alice", ws, carol.id);
    });
    expect(status).toBe(204);

    await addMember(rest, "alice", ws, "carol", { principalId: carol.id }, "admin");
    expect(await accept("dave", carols.id)).toBe(404);
    expect(t.atrium.workspaces.roleOf(ws, dave.id)).toBeUndefined();
  });
});

describe("a demotion whose write lands but whose folder flush fails", () => {
  it("is 200 with the new role, and ends the invitations they sent: promoted again, they are not back", async () => {
    const ws = await newWorkspace();
    await addMember(rest, "alice", ws, "carol", { principalId: carol.id }, "admin");
    const carols = await invite(rest, "carol", ws, { principalId: dave.id });
    let status = 0;
    let answer: unknown;
    await withFolderFlushFailing(ws, async () => {
      const response = await t.rest("alice", "PATCH", `/v1/workspaces/${ws}/members/${carol.id}`, {
        role: "member",
      });
      status = response.status;
      answer = await response.json();
    });
    expect(status).toBe(200);
    const { members } = answer as { members: Array<{ principalId: string; role: string }> };
    expect(members.find((m) => m.principalId === carol.id)?.role).toBe("member");

    expect(await setRole(ws, carol.id, "admin")).toBe(200);
    expect(await accept("dave", carols.id)).toBe(404);
    expect(t.atrium.workspaces.roleOf(ws, dave.id)).toBeUndefined();
  });

  it("a demotion refused before its write still answers its refusal and ends nothing", async () => {
    const ws = await newWorkspace();
    // Alice is the only admin: demoting her is last_admin, and her invitations stay.
    const alices = await invite(rest, "alice", ws, { principalId: dave.id });
    expect(await setRole(ws, testPrincipal("alice").id, "member")).toBe(409);
    expect(await accept("dave", alices.id)).toBe(200);
  });
});

describe("a removal whose grants' revocation fails once it has landed", () => {
  const families = () => join(t.root, "_instance", "oauth", "families");
  /** Alice removes bob from `ws` while every grant write fails to flush, so none is stored. */
  const removeBobWhileGrantWritesFail = async (ws: string) => {
    let status = 0;
    await journalDuring(
      async () => {
        status = await removeAs("alice", ws, bob.id);
      },
      { sync: (path) => (path.startsWith(`${families()}/`) ? eio() : undefined) },
    );
    return status;
  };

  it("is logged, the grant is refused meanwhile, and housekeeping writes it revoked", async () => {
    const ws = await newWorkspace();
    const tokens = await bobConnects(ws);
    const [grant] = await liveGrantsOf(bob.id, ws);
    if (!grant) throw new Error("bob holds no grant");
    // Out, as every reader sees; the revocation's failure is the request's, and the log's.
    expect(await removeBobWhileGrantWritesFail(ws)).toBe(500);
    expect(t.atrium.workspaces.roleOf(ws, bob.id)).toBeUndefined();
    expect(captured.lines.some((line) => line.msg === "unhandled error")).toBe(true);
    expect((await t.atrium.oauth.grants.get(grant.grantId))?.revokedAt).toBeUndefined();
    // Refused all the same: a revocation is remembered before it is written.
    expect((await refreshTokens(t, tokens)).status).toBe(400);

    await t.atrium.oauth.grants.load();
    expect((await t.atrium.oauth.grants.get(grant.grantId))?.revokedAt).toEqual(expect.any(Number));
  });

  it("left unrevoked on disk over a restart, it is written revoked at boot", async () => {
    const ws = await newWorkspace();
    const tokens = await bobConnects(ws);
    const [grant] = await liveGrantsOf(bob.id, ws);
    if (!grant) throw new Error("bob holds no grant");
    expect(await removeBobWhileGrantWritesFail(ws)).toBe(500);
    t = await t.restart();
    expect((await t.atrium.oauth.grants.get(grant.grantId))?.revokedAt).toEqual(expect.any(Number));
    expect(t.atrium.oauth.grants.isRevoked(grant.grantId)).toBe(true);
    await addMember(rest, "alice", ws, "bob", { principalId: bob.id });
    expect((await refreshTokens(t, tokens)).status).toBe(400);
  });

  it("every grant of the person is refused once the first write fails, also once they are re-added", async () => {
    const ws = await newWorkspace();
    const first = await bobConnects(ws);
    const second = await obtainTokens(t, "bob", ws);
    // Before, the first failed write stopped the revocations: the second grant was never refused.
    expect(await removeBobWhileGrantWritesFail(ws)).toBe(500);
    // Re-added within the access tokens' lifetime, before any housekeeping.
    await addMember(rest, "alice", ws, "bob", { principalId: bob.id });
    const answers = [
      (await mcpPost(t, ws, first.access_token, listTools)).status,
      (await mcpPost(t, ws, second.access_token, listTools)).status,
    ];
    expect(answers).toEqual([401, 401]);
  });

  it("the invitations the removed admin sent end all the same: re-added as admin, they are not back", async () => {
    const ws = await newWorkspace();
    await addMember(rest, "alice", ws, "bob", { principalId: bob.id }, "admin");
    await obtainTokens(t, "bob", ws);
    const bobs = await invite(rest, "bob", ws, { principalId: dave.id });
    expect(await removeBobWhileGrantWritesFail(ws)).toBe(500);
    await addMember(rest, "alice", ws, "bob", { principalId: bob.id }, "admin");
    expect(await accept("dave", bobs.id)).toBe(404);
  });
});
