import { readFile, writeFile } from "node:fs/promises";
import { afterEach, beforeEach, expect, it } from "vitest";
import type { UserDirectory } from "../../../src/identity/users.ts";
import { accessTokenLifetime } from "../../../src/oauth/grant-record.ts";
import { newGrantId } from "../../../src/oauth/grant-tokens.ts";
import { Grants } from "../../../src/oauth/grants.ts";
import { SigningKeys } from "../../../src/oauth/keys.ts";
import { AccessTokens } from "../../../src/oauth/tokens.ts";
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

// A grant recorded before token expiries were kept (no accessTokensUntil), rotated once under a
// shorter TTL, then revoked: housekeeping deletes its file and forgets its id once the new short
// token is past, while the day-long token the earlier process signed still has ~23 h. Tokens are
// accepted only for a live grant indexed (Grants.admitsTokensOf), so it stays refused.

const ALICE = person("alice");
const CLIENT = "atc_0123456789abcdef0123456789abcdef";
const DAY_SECONDS = 86_400;
let layout: StorageLayout;
let users: UserDirectory;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  ({ layout, users, cleanup } = await tempInstance());
});
afterEach(() => cleanup());

async function grantsWithTtl(clock: TestClock, accessTokenTtlSeconds: number): Promise<Grants> {
  const grants = new Grants(layout, {
    users,
    memberOf: ALWAYS_A_MEMBER,
    resourceOf: (workspaceId) => `${RESOURCE.replace(/\/mcp\/.*$/, "")}/mcp/${workspaceId}`,
    accessTokenTtlSeconds,
    refreshTokenTtlSeconds: REFRESH_TTL_SECONDS,
    refreshReuseGraceSeconds: 0,
    log: silentLog,
    clock,
  });
  await grants.load();
  return grants;
}

it("a pre-upgrade grant (no accessTokensUntil) whose day-long token lives stays revoked after its first short-TTL rotation", async () => {
  const clock = testClock();
  // Before the upgrade: a grant whose exchange issued a 1-day access token; its record has no accessTokensUntil.
  const before = await grantsWithTtl(clock, DAY_SECONDS);
  const grantId = newGrantId();
  const { refreshToken } = await before.create(
    { grantId, clientId: CLIENT, principalId: ALICE.id, resource: RESOURCE, scopes: ["mcp:read"] },
    { refresh: true, consentedAt: clock() },
  );
  const keys = new SigningKeys(layout, DAY_SECONDS, clock);
  await keys.load();
  const sign = (grants: Grants) =>
    new AccessTokens({ keys, grants, publicUrl: () => RESOURCE.replace(/\/mcp\/.*$/, ""), clock });
  // The day-long access token the pre-upgrade exchange sent the client.
  const { token: dayLong } = await sign(before).issue({
    sub: ALICE.id,
    clientId: CLIENT,
    scopes: ["mcp:read"],
    audience: RESOURCE,
    grantId,
    lifetime: accessTokenLifetime(clock(), DAY_SECONDS),
  });
  const file = layout.collectionFile("oauth/families", grantId);
  const { accessTokensUntil: dayLongTokenExpiry, ...older } = JSON.parse(await readFile(file, "utf8"));
  await writeFile(file, JSON.stringify(older));

  // Upgrade, restart with oauth.accessTokenTtlSeconds: 300; the client refreshes once, then the grant is revoked.
  clock.advance(60_000);
  const after = await grantsWithTtl(clock, 300);
  await after.refresh(refreshToken as string, { clientId: CLIENT });
  await after.revoke(grantId);

  // An hour later housekeeping runs; the day-long token (exp = dayLongTokenExpiry) has ~23 h left.
  clock.advance(3600 * 1000);
  await after.load();
  expect(clock()).toBeLessThan(dayLongTokenExpiry);
  await expect(sign(after).verify(dayLong, RESOURCE)).rejects.toThrow();
});
