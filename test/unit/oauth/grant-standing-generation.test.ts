import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { UserDirectory } from "../../../src/identity/users.ts";
import { newGrantId } from "../../../src/oauth/grant-tokens.ts";
import type { Grants } from "../../../src/oauth/grants.ts";
import type { StorageLayout } from "../../../src/storage/paths.ts";
import { newGrants, person, RESOURCE, type TestClock, tempInstance, testClock } from "./fixtures.ts";

// A grant is judged by the standing generation its person consented under, not by its stamp
// against the reactivation's (ADR 0169): a clock stepped back after a reactivation made every new
// consent "older" than it, and a reactivation stamped before a grant let the grant back in.

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

/** A consent Alice gives now, under her generation now, exchanged at once. */
function consent() {
  return grants.create(
    {
      grantId: newGrantId(),
      clientId: CLIENT,
      principalId: ALICE.id,
      resource: RESOURCE,
      scopes: ["mcp:read"],
      standingGeneration: users.standingOf(ALICE.id).generation,
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

it("a grant that kept no generation is judged by its stamp until a reactivation counts", async () => {
  await users.setDeactivated(ALICE.id, true);
  await users.setDeactivated(ALICE.id, false);
  // As a release before ADR 0169 wrote them: no generation in the profile nor in the grant.
  const path = join(layout.userDir(ALICE.id), "profile.json");
  const { standingGeneration: _dropped, ...profile } = JSON.parse(await readFile(path, "utf8"));
  await writeFile(path, JSON.stringify(profile));
  const legacy = new UserDirectory(layout, clock);
  await legacy.load();
  expect(legacy.standingOf(ALICE.id).generation).toBe(0);
  grants = newGrants(layout, legacy, clock);
  await grants.load();
  const make = (consentedAt: number) =>
    grants.create(
      { grantId: newGrantId(), clientId: CLIENT, principalId: ALICE.id, resource: RESOURCE, scopes: [] },
      { refresh: true, consentedAt },
    );
  await expect(make(clock())).rejects.toThrow(/deactivated since/);
  clock.advance(1);
  const { refreshToken } = await make(clock());
  const next = await grants.refresh(refreshToken as string, { clientId: CLIENT });
  // A reactivation counted since is later than every grant that kept no generation.
  clock.advance(-HOUR_MS);
  await legacy.setDeactivated(ALICE.id, true);
  await legacy.setDeactivated(ALICE.id, false);
  await expect(grants.refresh(next.refreshToken, { clientId: CLIENT })).rejects.toThrow(/deactivated since/);
});
