import { afterEach, beforeEach, expect, it } from "vitest";
import type { UserDirectory } from "../../../src/identity/users.ts";
import { newGrantId } from "../../../src/oauth/grant-tokens.ts";
import type { Grants } from "../../../src/oauth/grants.ts";
import { SigningKeys } from "../../../src/oauth/keys.ts";
import { AccessTokens } from "../../../src/oauth/tokens.ts";
import type { StorageLayout } from "../../../src/storage/paths.ts";
import { newGrants, PUBLIC_URL, person, RESOURCE, tempInstance, testClock } from "./fixtures.ts";

// A revoked grant's file is deleted and its id forgotten once its last token is past; a clock
// stepped back after that makes the token's `exp` future again. Tokens are accepted only for a
// live grant indexed (Grants.admitsTokensOf), so it stays refused (ADR 0168's rule).

const ALICE = person("alice");
const CLIENT = "atc_0123456789abcdef0123456789abcdef";
let layout: StorageLayout;
let users: UserDirectory;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  ({ layout, users, cleanup } = await tempInstance());
});
afterEach(() => cleanup());

it("a revoked grant's access token stays refused after housekeeping and a clock step back", async () => {
  const clock = testClock();
  const keys = new SigningKeys(layout, 900, clock);
  await keys.load();
  const grants: Grants = newGrants(layout, users, clock, undefined, { accessTokenTtlSeconds: 900 });
  await grants.load();
  const tokens = new AccessTokens({ keys, grants, publicUrl: () => PUBLIC_URL, clock });

  const grantId = newGrantId();
  const { lifetime } = await grants.create(
    { grantId, clientId: CLIENT, principalId: ALICE.id, resource: RESOURCE, scopes: ["mcp:read"] },
    { refresh: true, consentedAt: clock() },
  );
  const { token } = await tokens.issue({
    sub: ALICE.id,
    clientId: CLIENT,
    scopes: ["mcp:read"],
    audience: RESOURCE,
    grantId,
    lifetime,
  });
  await grants.revoke(grantId);
  await expect(tokens.verify(token, RESOURCE)).rejects.toThrow();

  // The next hourly housekeeping, past the token's exp: file and revoked id are let go.
  clock.advance(3600 * 1000);
  await grants.load();
  // The wall clock is stepped back 50 minutes (still after the revocation).
  clock.advance(-50 * 60 * 1000);
  await expect(tokens.verify(token, RESOURCE)).rejects.toThrow();
});
