import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { EventBus } from "../../../src/kernel/events.ts";
import { createLogger } from "../../../src/log.ts";
import { StorageLayout } from "../../../src/storage/paths.ts";
import { begunInCurrentMembership } from "../../../src/workspace/membership-id.ts";
import type { Member } from "../../../src/workspace/model.ts";
import { WorkspaceStore } from "../../../src/workspace/store.ts";
import { FakeTime } from "../../helpers/fake-time.ts";

// Each join draws a random membership id, recorded on the member; what a member begins records
// it (ADR 0169, amended). Random, not counted: nothing in workspace.json can go back to hand an
// id out again.

const ALICE = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";
const BOB = "usr_bbbbbbbbbbbbbbbbbbbbbbbb";
const CAROL = "usr_cccccccccccccccccccccccc";
const JOINED = "2026-12-07T09:00:00.000Z";
const JOINED_MS = Date.parse(JOINED);
const MEMBERSHIP_ID = /^mbs_[0-9a-f]{32}$/;

let root: string;
let layout: StorageLayout;
let time: FakeTime;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "atrium-membership-id-"));
  layout = new StorageLayout(root);
  time = new FakeTime(Date.parse("2026-12-07T12:00:00Z"));
});

afterEach(() => rm(root, { recursive: true, force: true }));

async function loadedStore(): Promise<WorkspaceStore> {
  const store = new WorkspaceStore(layout, new EventBus(createLogger("silent")), time.clock);
  await store.load();
  return store;
}

function idOf(store: WorkspaceStore, ws: string, principalId: string): string | undefined {
  return store.memberOf(ws, principalId)?.membershipId;
}

describe("the workspace store", () => {
  it("gives each join its own membership id, a re-add a new one, across a removal and a restart", async () => {
    let store = await loadedStore();
    const ws = (await store.create("W", ALICE)).id;
    await store.addMember(ws, BOB, "member");
    const first = idOf(store, ws, BOB);
    expect(idOf(store, ws, ALICE)).toMatch(MEMBERSHIP_ID);
    expect(first).toMatch(MEMBERSHIP_ID);
    expect(first).not.toBe(idOf(store, ws, ALICE));
    await store.removeMember(ws, BOB, ALICE);
    store = await loadedStore();
    await store.addMember(ws, BOB, "member");
    expect(idOf(store, ws, BOB)).toMatch(MEMBERSHIP_ID);
    expect(idOf(store, ws, BOB)).not.toBe(first);
    // No workspace-level count to go back: the file holds the members' ids and nothing else of it.
    expect(Object.keys(JSON.parse(await readFile(layout.workspaceFile(ws), "utf8")))).not.toContain(
      "lastMembershipGeneration",
    );
  });

  it("does not hand a former member's membership out again when workspace.json is restored from a backup", async () => {
    let store = await loadedStore();
    const ws = (await store.create("W", ALICE)).id;
    await store.addMember(ws, BOB, "member");
    // The operator's backup of workspace.json, taken before Carol joined.
    const backup = await readFile(layout.workspaceFile(ws), "utf8");
    await store.addMember(ws, CAROL, "member");
    const left = store.memberOf(ws, CAROL) as Member;
    // What Carol began in that membership, as a connection grant or a consent records it.
    const begun = { at: time.clock(), membershipId: left.membershipId };
    await store.removeMember(ws, CAROL, ALICE);
    await writeFile(layout.workspaceFile(ws), backup);
    store = await loadedStore();
    time.advance(60_000);
    await store.addMember(ws, CAROL, "member");
    const rejoined = store.memberOf(ws, CAROL) as Member;
    expect(rejoined.membershipId).not.toBe(left.membershipId);
    expect(begunInCurrentMembership(rejoined, begun)).toBe(false);
  });

  it("gives a join an id in a workspace written before ids were kept, and leaves its old members without one", async () => {
    let store = await loadedStore();
    const ws = (await store.create("W", ALICE)).id;
    const path = layout.workspaceFile(ws);
    const old = JSON.parse(await readFile(path, "utf8"));
    old.members = [{ principalId: ALICE, role: "admin", addedAt: JOINED }];
    await writeFile(path, JSON.stringify(old));
    store = await loadedStore();
    await store.addMember(ws, BOB, "member");
    expect(idOf(store, ws, BOB)).toMatch(MEMBERSHIP_ID);
    expect(idOf(store, ws, ALICE)).toBeUndefined();
  });

  it("loads a member development builds gave a numeric membershipGeneration as one holding no id", async () => {
    let store = await loadedStore();
    const ws = (await store.create("W", ALICE)).id;
    const path = layout.workspaceFile(ws);
    const dev = JSON.parse(await readFile(path, "utf8"));
    dev.members = [{ principalId: ALICE, role: "admin", addedAt: JOINED, membershipGeneration: 1 }];
    dev.lastMembershipGeneration = 1;
    await writeFile(path, JSON.stringify(dev));
    store = await loadedStore();
    const alice = store.memberOf(ws, ALICE) as Member;
    expect(alice.membershipId).toBeUndefined();
    expect(begunInCurrentMembership(alice, { at: JOINED_MS })).toBe(true);
  });

  it("refuses to boot on a membership id of another shape, naming the workspace and the member", async () => {
    const ws = (await (await loadedStore()).create("W", ALICE)).id;
    const path = layout.workspaceFile(ws);
    const record = JSON.parse(await readFile(path, "utf8"));
    for (const bad of [2, "", "mbs_0123", `MBS_${"0".repeat(32)}`, null]) {
      await writeFile(
        path,
        JSON.stringify({ ...record, members: [{ ...record.members[0], membershipId: bad }] }),
      );
      const refused = loadedStore();
      await expect(refused).rejects.toThrow(`Workspace ${ws} is corrupt`);
      await expect(refused).rejects.toThrow(`member ${ALICE} a membershipId`);
    }
  });
});

describe("begunInCurrentMembership", () => {
  const ID = `mbs_${"4".repeat(32)}`;
  const OTHER = `mbs_${"3".repeat(32)}`;
  const holding: Member = { principalId: BOB, role: "member", addedAt: JOINED, membershipId: ID };
  const holdingNone: Member = { principalId: BOB, role: "member", addedAt: JOINED };

  it("admits only the member's own membership id, whatever the stamps say", () => {
    expect(begunInCurrentMembership(holding, { at: JOINED_MS - 1, membershipId: ID })).toBe(true);
    expect(begunInCurrentMembership(holding, { at: JOINED_MS + 1, membershipId: OTHER })).toBe(false);
    // A record with an id against a member without one: begun in a membership since lost (a
    // workspace.json restored from before ids), never this one.
    expect(begunInCurrentMembership(holdingNone, { at: JOINED_MS + 1, membershipId: ID })).toBe(false);
  });

  it("judges a record that kept no id by its stamp while the member holds none, and refuses it once they do", () => {
    expect(begunInCurrentMembership(holdingNone, { at: JOINED_MS })).toBe(true);
    expect(begunInCurrentMembership(holdingNone, { at: JOINED_MS - 1 })).toBe(false);
    expect(begunInCurrentMembership(holding, { at: JOINED_MS + 1 })).toBe(false);
  });
});
