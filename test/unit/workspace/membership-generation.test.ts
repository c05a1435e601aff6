import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { EventBus } from "../../../src/kernel/events.ts";
import { createLogger } from "../../../src/log.ts";
import { StorageLayout } from "../../../src/storage/paths.ts";
import { begunInCurrentMembership } from "../../../src/workspace/membership-generation.ts";
import type { Member } from "../../../src/workspace/model.ts";
import { WorkspaceStore } from "../../../src/workspace/store.ts";
import { FakeTime } from "../../helpers/fake-time.ts";

// Each join takes the workspace's next membership generation, kept in workspace.json so that it
// survives the member's removal; what a member begins records it (ADR 0169, amended).

const ALICE = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";
const BOB = "usr_bbbbbbbbbbbbbbbbbbbbbbbb";
const JOINED = "2026-12-07T09:00:00.000Z";
const JOINED_MS = Date.parse(JOINED);

let root: string;
let layout: StorageLayout;
let time: FakeTime;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "atrium-membership-generation-"));
  layout = new StorageLayout(root);
  time = new FakeTime(Date.parse("2026-12-07T12:00:00Z"));
});

afterEach(() => rm(root, { recursive: true, force: true }));

async function loadedStore(): Promise<WorkspaceStore> {
  const store = new WorkspaceStore(layout, new EventBus(createLogger("silent")), time.clock);
  await store.load();
  return store;
}

describe("the workspace store", () => {
  it("gives each join the next generation, a re-add a new one, across a removal and a restart", async () => {
    let store = await loadedStore();
    const ws = (await store.create("W", ALICE)).id;
    expect(store.memberOf(ws, ALICE)?.membershipGeneration).toBe(1);
    await store.addMember(ws, BOB, "member");
    expect(store.memberOf(ws, BOB)?.membershipGeneration).toBe(2);
    await store.removeMember(ws, BOB, ALICE);
    store = await loadedStore();
    await store.addMember(ws, BOB, "member");
    expect(store.memberOf(ws, BOB)?.membershipGeneration).toBe(3);
    expect(store.get(ws)?.lastMembershipGeneration).toBe(3);
  });

  it("counts on from a workspace written before generations were kept", async () => {
    let store = await loadedStore();
    const ws = (await store.create("W", ALICE)).id;
    const path = layout.workspaceFile(ws);
    const { lastMembershipGeneration: _counter, ...old } = JSON.parse(await readFile(path, "utf8"));
    old.members = [{ principalId: ALICE, role: "admin", addedAt: JOINED }];
    await writeFile(path, JSON.stringify(old));
    store = await loadedStore();
    await store.addMember(ws, BOB, "member");
    expect(store.memberOf(ws, BOB)?.membershipGeneration).toBe(1);
  });

  it("refuses to boot on a generation that is not a count, naming the workspace", async () => {
    const ws = (await (await loadedStore()).create("W", ALICE)).id;
    const path = layout.workspaceFile(ws);
    const record = JSON.parse(await readFile(path, "utf8"));
    for (const bad of [
      { lastMembershipGeneration: -1 },
      { members: [{ ...record.members[0], membershipGeneration: "2" }] },
    ]) {
      await writeFile(path, JSON.stringify({ ...record, ...bad }));
      await expect(loadedStore()).rejects.toThrow(`Workspace ${ws} is corrupt`);
    }
  });
});

describe("begunInCurrentMembership", () => {
  const counted: Member = { principalId: BOB, role: "member", addedAt: JOINED, membershipGeneration: 4 };
  const uncounted: Member = { principalId: BOB, role: "member", addedAt: JOINED };

  it("admits only the member's own generation, whatever the stamps say", () => {
    expect(begunInCurrentMembership(counted, { at: JOINED_MS - 1, membershipGeneration: 4 })).toBe(true);
    expect(begunInCurrentMembership(counted, { at: JOINED_MS + 1, membershipGeneration: 3 })).toBe(false);
    // Greater: a workspace.json restored from a backup; nothing it cannot place is admitted.
    expect(begunInCurrentMembership(counted, { at: JOINED_MS + 1, membershipGeneration: 5 })).toBe(false);
    expect(begunInCurrentMembership(uncounted, { at: JOINED_MS - 1, membershipGeneration: 0 })).toBe(true);
  });

  it("judges a record that kept no generation by its stamp while the membership was not counted, and refuses it once it was", () => {
    expect(begunInCurrentMembership(uncounted, { at: JOINED_MS })).toBe(true);
    expect(begunInCurrentMembership(uncounted, { at: JOINED_MS - 1 })).toBe(false);
    expect(begunInCurrentMembership(counted, { at: JOINED_MS + 1 })).toBe(false);
  });
});
