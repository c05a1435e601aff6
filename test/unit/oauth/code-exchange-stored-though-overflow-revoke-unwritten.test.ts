import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { s256 } from "../../../src/crypto/pkce.ts";
import { AuthorizationCodes, type CodeGrant } from "../../../src/oauth/codes.ts";
import { newGrantId } from "../../../src/oauth/grant-tokens.ts";
import type { Grants } from "../../../src/oauth/grants.ts";
import {
  newGrants,
  person,
  RESOURCE,
  silentLog,
  type TestClock,
  tempInstance,
  testClock,
} from "./fixtures.ts";

// A code exchange whose new grant is stored answers with its tokens, though revoking the person's
// grants past the cap could not be written (a full disk): it was answered 503 "try again", and the
// retry, finding the grant stored, was a replay that revoked it. The overflow is revoked in memory
// and written by the next load.

const GRANT: CodeGrant = {
  clientId: "atc_0123456789abcdef0123456789abcdef",
  redirectUri: "http://127.0.0.1:9999/cb",
  codeChallenge: s256("v".repeat(43)),
  scopes: ["mcp:read"],
  resource: RESOURCE,
  principalId: person("alice").id,
};
const full = () => Object.assign(new Error("ENOSPC: no space left on device"), { code: "ENOSPC" });

let cleanup: () => Promise<void>;
let clock: TestClock;
let grants: Grants;
let codes: AuthorizationCodes;
beforeEach(async () => {
  const instance = await tempInstance();
  cleanup = instance.cleanup;
  clock = testClock();
  grants = newGrants(instance.layout, instance.users, clock, undefined, { maxLiveGrantsPerPerson: 1 });
  codes = new AuthorizationCodes(instance.layout, grants, silentLog, clock);
});
afterEach(() => cleanup());

const makeGrant = (grantId: string) =>
  grants.create(
    {
      grantId,
      clientId: GRANT.clientId,
      principalId: GRANT.principalId,
      resource: RESOURCE,
      scopes: GRANT.scopes,
    },
    { refresh: true, consentedAt: clock() },
  );

it("an exchange whose grant is stored answers with it though the overflow revocation's write failed", async () => {
  const older = newGrantId();
  await makeGrant(older);
  clock.advance(1000);

  // The disk fills: the new grant's file lands, the overflowing grant's revocation write does not.
  const records = (grants as unknown as { records: { put: (id: string, r: unknown) => Promise<void> } })
    .records;
  const put = records.put.bind(records);
  const spy = vi.spyOn(records, "put").mockImplementation(async (id, record) => {
    if (id === older) throw full();
    return put(id, record);
  });

  const code = await codes.issue(GRANT);
  let first: unknown;
  const made = await codes
    .redeem(
      code,
      () => undefined,
      async (r) => ({ made: await makeGrant(r.grantId), grantId: r.grantId }),
    )
    .catch((e) => (first = e));
  spy.mockRestore();
  expect(first).toBeUndefined();
  expect((made as { grantId: string }).grantId).toMatch(/^gnt_/);
  // The older grant is past the cap: refused now, written revoked by the next load.
  expect(grants.isRevoked(older)).toBe(true);
  await grants.load();
  expect((await grants.get(older))?.revokedAt).toBeDefined();
});
