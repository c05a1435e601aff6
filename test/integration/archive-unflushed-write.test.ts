import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestAtrium, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { journalDuring } from "../helpers/fs-journal.ts";
import { addMember, invite } from "../helpers/members.ts";
import { mcpPost, obtainTokens, tokenRequest } from "../helpers/oauth.ts";
import { SseReader } from "../helpers/sse.ts";

// Archiving renames the workspace's folder into _archive/, then flushes the root and _archive/.
// When a flush after the rename failed, the workspace was gone from the disk but not from the
// index: the route answered 500 before ending its event streams, releasing its registry and
// revoking its invitations and grants, and a refresh of a member's grant still passed the
// membership check, getting fresh access tokens to a workspace nothing could address (ADR 0148).

let t: TestAtrium;
const bob = testPrincipal("bob");
const dave = testPrincipal("dave");
const listTools = { jsonrpc: "2.0", id: 1, method: "tools/list" };
const rest = (...args: Parameters<TestAtrium["rest"]>) => t.rest(...args);

beforeAll(async () => {
  t = await startTestAtrium();
  for (const name of ["alice", "bob", "dave"]) await t.rest(name, "GET", "/v1/workspaces");
});

afterAll(async () => {
  await t?.stop();
});

const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });

/** `work` with every flush of the folder `path` failing, as a disk's error does. */
const withFlushFailing = (path: string, work: () => Promise<unknown>) =>
  journalDuring(work, { sync: (synced) => (synced === path ? eio() : undefined) });

async function newWorkspace(): Promise<string> {
  const created = await t.rest("alice", "POST", "/v1/workspaces", { name: "Alice's team" });
  return ((await created.json()) as { id: string }).id;
}

async function archiveFlushFailing(ws: string, folder: string): Promise<number> {
  let status = 0;
  await withFlushFailing(folder, async () => {
    status = (await t.rest("alice", "DELETE", `/v1/workspaces/${ws}`)).status;
  });
  return status;
}

const invitationFile = (id: string) => join(t.root, "_instance", "invitations", `${id}.json`);

// First in the file: _archive/ is made by the first archive, its entry flushed in the root.
describe("an archive whose flush fails before its rename", () => {
  it("is 500, and the workspace is as it was", async () => {
    expect(existsSync(join(t.root, "_archive"))).toBe(false);
    const ws = await newWorkspace();
    expect(await archiveFlushFailing(ws, t.root)).toBe(500);
    expect(existsSync(join(t.root, "_archive"))).toBe(false);
    expect(existsSync(join(t.root, ws))).toBe(true);
    expect((await t.rest("alice", "GET", `/v1/workspaces/${ws}`)).status).toBe(200);
  });
});

describe("an archive whose rename lands but whose flush fails", () => {
  // The test above left no _archive/ (a folder whose flush fails is removed, ADR 0149): one archive
  // makes it and flushes it, so a failing flush of the root comes after the rename.
  beforeAll(async () => {
    expect((await t.rest("alice", "DELETE", `/v1/workspaces/${await newWorkspace()}`)).status).toBe(204);
  });

  for (const [after, folder] of [
    ["the root's", () => t.root],
    ["_archive/'s", () => join(t.root, "_archive")],
  ] as const) {
    it(`after ${after} is 204, and ends what goes with the workspace: streams, registry, invitations, grants`, async () => {
      const ws = await newWorkspace();
      await addMember(rest, "alice", ws, "bob", { principalId: bob.id });
      const tokens = await obtainTokens(t, "bob", ws);
      expect((await mcpPost(t, ws, tokens.access_token, listTools)).status).toBe(200);
      expect(await t.atrium.registries.peek(ws)).toBeDefined();
      const pending = await invite(rest, "alice", ws, { principalId: dave.id });
      const events = await t.rest("alice", "GET", `/v1/workspaces/${ws}/events`);
      expect(events.status).toBe(200);
      const stream = new SseReader(events);
      await stream.next();

      expect(await archiveFlushFailing(ws, folder())).toBe(204);
      expect(existsSync(join(t.root, ws))).toBe(false);
      expect(t.atrium.workspaces.get(ws)).toBeUndefined();
      expect(t.atrium.workspaces.listFor(bob.id).map((w) => w.id)).not.toContain(ws);
      expect((await t.rest("alice", "GET", `/v1/workspaces/${ws}`)).status).toBe(404);
      expect(await stream.rest()).toEqual([]);
      expect(await t.atrium.registries.peek(ws)).toBeUndefined();
      expect(existsSync(invitationFile(pending.id))).toBe(false);
      expect((await t.atrium.oauth.grants.listFor(bob.id)).filter((g) => g.workspaceId === ws)).toEqual([]);
      const refreshed = await tokenRequest(t, {
        grant_type: "refresh_token",
        refresh_token: tokens.refresh_token as string,
        client_id: tokens.clientId,
      });
      expect(refreshed.status).toBe(400);
    });
  }
});
