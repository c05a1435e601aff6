import { readFile, writeFile } from "node:fs/promises";
import { afterEach, beforeEach, expect, it } from "vitest";
import type { UserDirectory } from "../../../src/identity/users.ts";
import { newGrantId } from "../../../src/oauth/grant-tokens.ts";
import { Grants } from "../../../src/oauth/grants.ts";
import type { StorageLayout } from "../../../src/storage/paths.ts";
import {
  ALWAYS_A_MEMBER,
  person,
  REFRESH_TTL_SECONDS,
  RESOURCE,
  silentLog,
  type TestClock,
  tempInstance,
  testClock,
} from "./fixtures.ts";

// Housekeeping deletes a revoked grant's file and forgets its id once no access token it issued
// can still be valid. That was judged by the *current* oauth.accessTokenTtlSeconds, but the
// tokens were signed by an earlier process with the TTL it had: lower the TTL from 86,400 to 300
// and restart, and a grant revoked an hour ago was forgotten while its access token had ~23 h
// left, which Tokens.verify (asking only isRevoked) accepted again. The grant now records the
// latest expiry it issued; a record without it is judged by the longest TTL allowed (ADR 0016).

const ALICE = person("alice");
const CLIENT = "atc_0123456789abcdef0123456789abcdef";
const DAY_SECONDS = 86_400;
const TOLERANCE_MS = 61_000;
let layout: StorageLayout;
let users: UserDirectory;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  ({ layout, users, cleanup } = await tempInstance());
});
afterEach(() => cleanup());

async function grantsWithTtl(
  clock: TestClock,
  accessTokenTtlSeconds: number,
  graceSeconds = 0,
): Promise<Grants> {
  const grants = new Grants(layout, {
    users,
    memberOf: ALWAYS_A_MEMBER,
    resourceOf: (workspaceId) => `${RESOURCE.replace(/\/mcp\/.*$/, "")}/mcp/${workspaceId}`,
    accessTokenTtlSeconds,
    refreshTokenTtlSeconds: REFRESH_TTL_SECONDS,
    refreshReuseGraceSeconds: graceSeconds,
    log: silentLog,
    clock,
  });
  await grants.load();
  return grants;
}

function start(grants: Grants, clock: TestClock) {
  return grants.create(
    {
      grantId: newGrantId(),
      clientId: CLIENT,
      principalId: ALICE.id,
      resource: RESOURCE,
      scopes: ["mcp:read"],
    },
    { refresh: true, consentedAt: clock() },
  );
}

it("a grant revoked while its day-long access tokens live stays revoked after a restart with a shorter TTL, until they expire", async () => {
  const clock = testClock();
  const before = await grantsWithTtl(clock, DAY_SECONDS);
  const { grant } = await start(before, clock);
  await before.revoke(grant.grantId);

  // One hour later the operator restarts with oauth.accessTokenTtlSeconds: 300.
  clock.advance(3600 * 1000);
  const after = await grantsWithTtl(clock, 300);
  expect(after.isRevoked(grant.grantId)).toBe(true);

  // Once the day-long token has expired (and the clock tolerance passed), it is let go.
  clock.advance((DAY_SECONDS - 3600) * 1000 + TOLERANCE_MS);
  await after.load();
  expect(after.isRevoked(grant.grantId)).toBe(false);
  expect(await after.get(grant.grantId)).toBeUndefined();
});

it("a refresh under a long TTL records its token's expiry too", async () => {
  const clock = testClock();
  const before = await grantsWithTtl(clock, 300);
  const { grant, refreshToken } = await start(before, clock);
  clock.advance(60_000);
  const longer = await grantsWithTtl(clock, DAY_SECONDS);
  await longer.refresh(refreshToken as string, { clientId: CLIENT });
  await longer.revoke(grant.grantId);

  clock.advance(3600 * 1000);
  const after = await grantsWithTtl(clock, 300);
  expect(after.isRevoked(grant.grantId)).toBe(true);
});

it("a revoked grant recorded before token expiries were kept is judged by the longest TTL allowed", async () => {
  const clock = testClock();
  const before = await grantsWithTtl(clock, 300);
  const { grant } = await start(before, clock);
  await before.revoke(grant.grantId);
  const file = layout.collectionFile("oauth/families", grant.grantId);
  const { accessTokensUntil: _dropped, ...older } = JSON.parse(await readFile(file, "utf8"));
  await writeFile(file, JSON.stringify(older));

  clock.advance(3600 * 1000);
  const after = await grantsWithTtl(clock, 300);
  expect(after.isRevoked(grant.grantId)).toBe(true);
  clock.advance((DAY_SECONDS - 3600) * 1000 + TOLERANCE_MS);
  await after.load();
  expect(after.isRevoked(grant.grantId)).toBe(false);
});

it("a successor resent within the grace comes with an access token that ends with the rotation's, so nothing is written", async () => {
  const clock = testClock();
  const grants = await grantsWithTtl(clock, 300, 30);
  const { grant, refreshToken } = await start(grants, clock);
  const rotated = await grants.refresh(refreshToken as string, { clientId: CLIENT });
  const written = await readFile(layout.collectionFile("oauth/families", grant.grantId), "utf8");
  clock.advance(10_000);
  const resent = await grants.refresh(refreshToken as string, { clientId: CLIENT });
  expect(resent.refreshToken).toBe(rotated.refreshToken);
  expect(resent.lifetime.expiresAt).toBe(rotated.lifetime.expiresAt);
  expect(resent.lifetime.issuedAt).toBe(rotated.lifetime.issuedAt + 10);
  expect(await readFile(layout.collectionFile("oauth/families", grant.grantId), "utf8")).toBe(written);
});
