import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { EventBus } from "../../../../src/kernel/events.ts";
import { createLogger } from "../../../../src/log.ts";
import { GrantStore, Grants } from "../../../../src/platform/connections/grants.ts";
import { StorageLayout } from "../../../../src/storage/paths.ts";
import { WorkspaceStore } from "../../../../src/workspace/store.ts";

// A connection grant counts only in its holder's current membership (ADR 0042), told by the
// membership id it records, not by `grantedAt` against the member's `addedAt`
// (ADR 0169, amended): compared by stamps, a member added just before a clock step back was
// refused the grant an admin gave them until the clock passed `addedAt`, and a removal and a
// re-add stamped before an old grant let it count again.

const OWNER = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";
const BOB = "usr_bbbbbbbbbbbbbbbbbbbbbbbb";
const HOUR_MS = 60 * 60 * 1000;
const REQUEST = { principalId: BOB, connection: "my_notes" };

let root: string;
let layout: StorageLayout;
let now: number;
const clock = () => now;
let workspaces: WorkspaceStore;
let store: GrantStore;
let grants: Grants;
let ws: string;

/** The workspace store and the grants as a process starts them. */
async function boot(): Promise<void> {
  workspaces = new WorkspaceStore(layout, new EventBus(createLogger("silent")), clock);
  await workspaces.load();
  store = new GrantStore(layout.partition("connections"));
  grants = new Grants(store, workspaces, clock);
}

async function bobHolds(): Promise<boolean> {
  const bob = workspaces.get(ws)?.members.find((m) => m.principalId === BOB);
  if (!bob) throw new Error("Bob is not a member");
  return store.has(ws, bob, "my_notes");
}

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "atrium-grant-membership-id-"));
  layout = new StorageLayout(root);
  now = Date.parse("2026-12-07T09:00:00Z");
  await boot();
  ws = (await workspaces.create("W", OWNER)).id;
  now += 3 * HOUR_MS;
});

afterEach(() => rm(root, { recursive: true, force: true }));

it("a grant to a member added just before the clock is stepped back counts at once", async () => {
  await workspaces.addMember(ws, BOB, "member");
  now -= HOUR_MS;
  expect((await grants.grant(ws, OWNER, REQUEST)).created).toBe(true);
  expect(await bobHolds()).toBe(true);
  expect(await grants.list(ws, OWNER)).toHaveLength(1);
});

it("a grant from before a removal stays over when the re-add is stamped before it, across a restart", async () => {
  await workspaces.addMember(ws, BOB, "member");
  await grants.grant(ws, OWNER, REQUEST);
  now -= HOUR_MS;
  await workspaces.removeMember(ws, BOB, OWNER);
  await workspaces.addMember(ws, BOB, "member");
  await boot();
  expect(await bobHolds()).toBe(false);
  expect(await grants.list(ws, OWNER)).toEqual([]);
  // Granted again, in this membership, it counts.
  expect((await grants.grant(ws, OWNER, REQUEST)).created).toBe(true);
  expect(await bobHolds()).toBe(true);
});

it("a grant the tidy on leaving missed stays over after workspace.json is restored from a backup and its holder re-added", async () => {
  // The operator's backup of workspace.json, taken before Bob joined.
  const backup = await readFile(layout.workspaceFile(ws), "utf8");
  await workspaces.addMember(ws, BOB, "member");
  await grants.grant(ws, OWNER, REQUEST);
  // Removed, the tidy on leaving not run (personal.ts watchMembership is not wired here).
  await workspaces.removeMember(ws, BOB, OWNER);
  await writeFile(layout.workspaceFile(ws), backup);
  await boot();
  now += HOUR_MS;
  await workspaces.addMember(ws, BOB, "member");
  expect(await bobHolds()).toBe(false);
  expect(await grants.list(ws, OWNER)).toEqual([]);
});
