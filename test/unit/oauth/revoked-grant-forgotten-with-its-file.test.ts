import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import type { UserDirectory } from "../../../src/identity/users.ts";
import { newGrantId } from "../../../src/oauth/grant-tokens.ts";
import type { StorageLayout } from "../../../src/storage/paths.ts";
import { ACCESS_TTL_SECONDS, newGrants, person, RESOURCE, tempInstance, testClock } from "./fixtures.ts";

// Grants.revoked gains every revoked grant's id (a sign-out, a leave, a reused refresh token, an
// RFC 7009 revoke). Housekeeping's load() deletes a grant's file once no access token it issued
// can still be valid; the id stayed in memory, so the set grew with every revocation for the
// process's life.

const ALICE = person("alice");
const CLIENT = "atc_0123456789abcdef0123456789abcdef";
let layout: StorageLayout;
let users: UserDirectory;
let cleanup: () => Promise<void>;

beforeEach(async () => {
  ({ layout, users, cleanup } = await tempInstance());
});
afterEach(() => cleanup());

it("a revoked grant whose file housekeeping deleted is no longer held as revoked", async () => {
  const clock = testClock();
  const grants = newGrants(layout, users, clock);
  await grants.load();
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    const grantId = newGrantId();
    await grants.create(
      { grantId, clientId: CLIENT, principalId: ALICE.id, resource: RESOURCE, scopes: ["mcp:read"] },
      { refresh: true, consentedAt: clock() },
    );
    await grants.revoke(grantId);
    ids.push(grantId);
  }
  // Housekeeping before the access tokens expire keeps both the files and the revocations.
  await grants.load();
  for (const id of ids) expect(grants.isRevoked(id)).toBe(true);

  clock.advance((ACCESS_TTL_SECONDS + 3600) * 1000);
  await grants.load();
  const families = join(layout.instanceDir(), "oauth", "families");
  const left = (await readdir(families).catch(() => [] as string[])).filter((n) => !n.startsWith("."));
  expect(left).toEqual([]);
  for (const id of ids) expect(grants.isRevoked(id)).toBe(false);
});
