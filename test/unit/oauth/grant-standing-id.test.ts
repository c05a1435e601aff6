import { copyFile, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { UserDirectory } from "../../../src/identity/users.ts";
import type { NewGrant } from "../../../src/oauth/grant-record.ts";
import { newGrantId } from "../../../src/oauth/grant-tokens.ts";
import type { Grants } from "../../../src/oauth/grants.ts";
import type { StorageLayout } from "../../../src/storage/paths.ts";
import { newGrants, person, RESOURCE, type TestClock, tempInstance, testClock } from "./fixtures.ts";

// A grant is judged by the standing id its person consented under, not by its stamp against the
// reactivation's (ADR 0169): a clock stepped back after a reactivation made every new consent
// "older" than it, and a reactivation stamped before a grant let the grant back in. An id, not a
// count: a profile.json restored from a backup took the count back, and a later reactivation
// handed out again the number a grant from before it held (amended later still).

const ALICE = person("alice");
const CLIENT = "atc_0123456789abcdef0123456789abcdef";
const HOUR_MS = 60 * 60 * 1000;

let layout: StorageLayout;
let cleanup: () => Promise<void>;
let clock: TestClock;
let users: UserDirectory;
let grants: Grants;

/** The directory and the grants as a process starts them, on the test clock. */
async function boot(): Promise<void> {
  users = new UserDirectory(layout, clock);
  await users.load();
  grants = newGrants(layout, users, clock);
  await grants.load();
}

/** A consent Alice gives now, under her standing now, exchanged at once. */
function consent() {
  return grants.create(
    {
      grantId: newGrantId(),
      clientId: CLIENT,
      principalId: ALICE.id,
      resource: RESOURCE,
      scopes: ["mcp:read"],
      standingId: users.standingOf(ALICE.id).standingId,
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

it("a consent given after a reactivation counts though the clock was stepped back in between, across a restart", async () => {
  await users.setDeactivated(ALICE.id, true);
  await users.setDeactivated(ALICE.id, false);
  clock.advance(-HOUR_MS);
  const { grant, refreshToken } = await consent();
  await expect(grants.refresh(refreshToken as string, { clientId: CLIENT })).resolves.toBeDefined();
  await boot();
  expect(grants.admitsTokensOf(grant.grantId)).toBe(true);
});

it("a grant a deactivation missed stays over when the reactivation is stamped before it, across a restart", async () => {
  // Made while the deactivation ran, so its revocation did not find it.
  const { grant, refreshToken } = await consent();
  clock.advance(-HOUR_MS);
  await users.setDeactivated(ALICE.id, true);
  await users.setDeactivated(ALICE.id, false);
  await boot();
  // The load writes it revoked, as a refresh would refuse it.
  expect(grants.admitsTokensOf(grant.grantId)).toBe(false);
  expect((await grants.get(grant.grantId))?.revokedAt).toEqual(expect.any(Number));
  await expect(grants.refresh(refreshToken as string, { clientId: CLIENT })).rejects.toThrow();
});

it.each([
  ["kept no standing id", undefined],
  ["holds a development build's numeric standingGeneration", 1],
])("a grant that %s is judged by its stamp until a reactivation draws an id", async (_label, generation) => {
  await users.setDeactivated(ALICE.id, true);
  await users.setDeactivated(ALICE.id, false);
  // As a release before standing ids wrote them: no id in the profile nor in the grant.
  const path = join(layout.userDir(ALICE.id), "profile.json");
  const { standingId: _dropped, ...profile } = JSON.parse(await readFile(path, "utf8"));
  await writeFile(path, JSON.stringify({ ...profile, standingGeneration: generation }));
  const legacy = new UserDirectory(layout, clock);
  await legacy.load();
  expect(legacy.standingOf(ALICE.id).standingId).toBeUndefined();
  grants = newGrants(layout, legacy, clock);
  await grants.load();
  const make = (consentedAt: number) =>
    grants.create(
      {
        grantId: newGrantId(),
        clientId: CLIENT,
        principalId: ALICE.id,
        resource: RESOURCE,
        scopes: [],
        // What a development build wrote: not read, so the grant counts as one that kept no id.
        ...(generation === undefined ? {} : { standingGeneration: generation }),
      } as NewGrant,
      { refresh: true, consentedAt },
    );
  await expect(make(clock())).rejects.toThrow(/deactivated since/);
  clock.advance(1);
  const { refreshToken } = await make(clock());
  const next = await grants.refresh(refreshToken as string, { clientId: CLIENT });
  // A reactivation that drew an id since is later than every grant that kept none.
  clock.advance(-HOUR_MS);
  await legacy.setDeactivated(ALICE.id, true);
  await legacy.setDeactivated(ALICE.id, false);
  await expect(grants.refresh(next.refreshToken, { clientId: CLIENT })).rejects.toThrow(/deactivated since/);
});

it("a grant a deactivation missed stays over after the reactivation when profile.json was restored from a backup", async () => {
  await users.setDeactivated(ALICE.id, true);
  await users.setDeactivated(ALICE.id, false);
  const profile = join(layout.userDir(ALICE.id), "profile.json");
  const backup = join(layout.instanceDir(), "profile.backup.json");
  await copyFile(profile, backup); // the nightly backup
  await users.setDeactivated(ALICE.id, true);
  await users.setDeactivated(ALICE.id, false);
  // Made while the deactivation below ran, so its revocation does not find it.
  const { grant, refreshToken } = await consent();
  await copyFile(backup, profile); // the operator restores the profile
  users = new UserDirectory(layout, clock);
  await users.load();
  await users.setDeactivated(ALICE.id, true);
  await users.setDeactivated(ALICE.id, false);
  await boot();
  // The load writes it revoked, as a refresh would refuse it.
  expect(grants.admitsTokensOf(grant.grantId)).toBe(false);
  expect((await grants.get(grant.grantId))?.revokedAt).toEqual(expect.any(Number));
  await expect(grants.refresh(refreshToken as string, { clientId: CLIENT })).rejects.toThrow();
});
