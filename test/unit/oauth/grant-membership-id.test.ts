import { readFile, writeFile } from "node:fs/promises";
import { afterEach, beforeEach, expect, it } from "vitest";
import { UserDirectory } from "../../../src/identity/users.ts";
import { EventBus } from "../../../src/kernel/events.ts";
import type { MemberOf } from "../../../src/oauth/grant-standing.ts";
import { newGrantId } from "../../../src/oauth/grant-tokens.ts";
import type { Grants } from "../../../src/oauth/grants.ts";
import type { StorageLayout } from "../../../src/storage/paths.ts";
import { newMembershipId } from "../../../src/workspace/membership-id.ts";
import type { Member } from "../../../src/workspace/model.ts";
import { WorkspaceStore } from "../../../src/workspace/store.ts";
import {
  newGrants,
  PUBLIC_URL,
  person,
  RESOURCE,
  silentLog,
  type TestClock,
  tempInstance,
  testClock,
} from "./fixtures.ts";

// A grant counts only in the membership its person consented in, told by the membership id it
// records, not by its stamp against the member's `addedAt` (ADR 0169, amended).

const ALICE = person("alice");
const CLIENT = "atc_0123456789abcdef0123456789abcdef";
const HOUR_MS = 60 * 60 * 1000;

let layout: StorageLayout;
let cleanup: () => Promise<void>;
let clock: TestClock;
let users: UserDirectory;
let grants: Grants;
/** Alice's membership of the workspace, as the workspace store would hold it. */
let alice: Member | undefined;
let memberOf: MemberOf;

/** Alice joins (again): her membership draws a new id, as WorkspaceStore.addMember does. */
function join(): void {
  alice = {
    principalId: ALICE.id,
    role: "member",
    addedAt: new Date(clock()).toISOString(),
    membershipId: newMembershipId(),
  };
}

async function boot(): Promise<void> {
  users = new UserDirectory(layout, clock);
  await users.load();
  grants = newGrants(layout, users, clock, memberOf);
  await grants.load();
}

async function loadedWorkspaces(): Promise<WorkspaceStore> {
  const workspaces = new WorkspaceStore(layout, new EventBus(silentLog), clock);
  await workspaces.load();
  return workspaces;
}

function consent(resource = RESOURCE) {
  return grants.create(
    {
      grantId: newGrantId(),
      clientId: CLIENT,
      principalId: ALICE.id,
      resource,
      scopes: ["mcp:read"],
      standingId: users.standingOf(ALICE.id).standingId,
      membershipId: alice?.membershipId,
    },
    { refresh: true, consentedAt: clock() },
  );
}

beforeEach(async () => {
  ({ layout, cleanup } = await tempInstance());
  clock = testClock(Date.parse("2026-12-07T12:00:00Z"));
  alice = undefined;
  memberOf = () => alice;
  await boot();
  await users.record(ALICE);
});

afterEach(() => cleanup());

it("a consent given just after a join counts though the clock was stepped back in between", async () => {
  join();
  clock.advance(-HOUR_MS);
  const { grant, refreshToken } = await consent();
  await expect(grants.refresh(refreshToken as string, { clientId: CLIENT })).resolves.toBeDefined();
  await boot();
  expect(grants.admitsTokensOf(grant.grantId)).toBe(true);
});

it("a grant a removal missed stays over when the re-add is stamped before it, across a restart", async () => {
  join();
  const { grant, refreshToken } = await consent();
  clock.advance(-HOUR_MS);
  // Removed and added again, the removal's revocation not written (it failed, or never ran).
  join();
  await boot();
  expect(grants.admitsTokensOf(grant.grantId)).toBe(false);
  expect((await grants.get(grant.grantId))?.revokedAt).toEqual(expect.any(Number));
  await expect(grants.refresh(refreshToken as string, { clientId: CLIENT })).rejects.toThrow();
});

it("a grant a removal missed stays over after workspace.json is restored from a backup and its person re-added", async () => {
  let workspaces = await loadedWorkspaces();
  const owner = person("owner");
  const ws = (await workspaces.create("W", owner.id)).id;
  memberOf = (principalId, workspaceId) => workspaces.memberOf(workspaceId, principalId);
  // The operator's backup of workspace.json, taken before Alice joined.
  const backup = await readFile(layout.workspaceFile(ws), "utf8");
  await workspaces.addMember(ws, ALICE.id, "member");
  alice = workspaces.memberOf(ws, ALICE.id);
  const { grant, refreshToken } = await consent(`${PUBLIC_URL}/mcp/${ws}`);
  // Removed, the removal's revocation not written; then the backup is put back and Atrium restarted.
  await workspaces.removeMember(ws, ALICE.id, owner.id);
  await writeFile(layout.workspaceFile(ws), backup);
  workspaces = await loadedWorkspaces();
  clock.advance(HOUR_MS);
  await workspaces.addMember(ws, ALICE.id, "member");
  await boot();
  expect(grants.admitsTokensOf(grant.grantId)).toBe(false);
  await expect(grants.refresh(refreshToken as string, { clientId: CLIENT })).rejects.toThrow();
});
