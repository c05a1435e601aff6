import { afterEach, beforeEach, expect, it } from "vitest";
import { UserDirectory } from "../../../src/identity/users.ts";
import type { MemberOf } from "../../../src/oauth/grant-standing.ts";
import { newGrantId } from "../../../src/oauth/grant-tokens.ts";
import type { Grants } from "../../../src/oauth/grants.ts";
import type { StorageLayout } from "../../../src/storage/paths.ts";
import type { Member } from "../../../src/workspace/model.ts";
import { newGrants, person, RESOURCE, type TestClock, tempInstance, testClock } from "./fixtures.ts";

// A grant counts only in the membership its person consented in, told by the membership
// generation it records, not by its stamp against the member's `addedAt` (ADR 0169, amended).

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
const memberOf: MemberOf = () => alice;

function join(membershipGeneration: number): void {
  alice = {
    principalId: ALICE.id,
    role: "member",
    addedAt: new Date(clock()).toISOString(),
    membershipGeneration,
  };
}

async function boot(): Promise<void> {
  users = new UserDirectory(layout, clock);
  await users.load();
  grants = newGrants(layout, users, clock, memberOf);
  await grants.load();
}

function consent() {
  return grants.create(
    {
      grantId: newGrantId(),
      clientId: CLIENT,
      principalId: ALICE.id,
      resource: RESOURCE,
      scopes: ["mcp:read"],
      standingGeneration: users.standingOf(ALICE.id).generation,
      membershipGeneration: alice?.membershipGeneration,
    },
    { refresh: true, consentedAt: clock() },
  );
}

beforeEach(async () => {
  ({ layout, cleanup } = await tempInstance());
  clock = testClock(Date.parse("2026-12-07T12:00:00Z"));
  await boot();
  await users.record(ALICE);
});

afterEach(() => cleanup());

it("a consent given just after a join counts though the clock was stepped back in between", async () => {
  join(2);
  clock.advance(-HOUR_MS);
  const { grant, refreshToken } = await consent();
  await expect(grants.refresh(refreshToken as string, { clientId: CLIENT })).resolves.toBeDefined();
  await boot();
  expect(grants.admitsTokensOf(grant.grantId)).toBe(true);
});

it("a grant a removal missed stays over when the re-add is stamped before it, across a restart", async () => {
  join(2);
  const { grant, refreshToken } = await consent();
  clock.advance(-HOUR_MS);
  // Removed and added again, the removal's revocation not written (it failed, or never ran).
  join(3);
  await boot();
  expect(grants.admitsTokensOf(grant.grantId)).toBe(false);
  expect((await grants.get(grant.grantId))?.revokedAt).toEqual(expect.any(Number));
  await expect(grants.refresh(refreshToken as string, { clientId: CLIENT })).rejects.toThrow();
});
