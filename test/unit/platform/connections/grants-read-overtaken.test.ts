import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { type ConnectionGrant, GrantStore } from "../../../../src/platform/connections/grants.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import type { Member } from "../../../../src/workspace/model.ts";
import { holdingReadAnswer } from "../../../helpers/held-read.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// GrantStore reads grants.json without the workspace's lock (list, has); a revoke writes it under
// the lock. A read that read the file before the revoke's rename and came back after it kept the
// revoked grant, and has() trusts a cached "yes": the holder's personal connection went on acting
// in the shared workspace after the admin revoked it, or after they left (the leave's tidy is the
// same remove), until the next write. A read a write overtook keeps nothing (ADR 0162).

const OWNER = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";
const BOB = "usr_bbbbbbbbbbbbbbbbbbbbbbbb";
const BOB_MEMBER: Member = { principalId: BOB, role: "member", addedAt: "2026-01-01T00:00:00.000Z" };
const GRANT: ConnectionGrant = {
  principalId: BOB,
  connection: "my_notes",
  grantedBy: OWNER,
  grantedAt: "2026-01-02T00:00:00.000Z",
};
let temp: TempRoot;

beforeEach(async () => {
  temp = await openTempRoot("grants-read-overtaken", OWNER);
});

afterEach(async () => {
  await temp.remove();
});

it("a grant revoked while a read of the grants was under way is not honoured once that read comes back", async () => {
  await new GrantStore(temp.layout.partition("connections")).add(temp.ws, GRANT, BOB_MEMBER, NO_CALLER);
  // The process as after a restart: nothing kept.
  const grants = new GrantStore(temp.layout.partition("connections"));
  const file = join(temp.layout.partition("connections").dir(temp.ws), "grants.json");

  await holdingReadAnswer(file, async (held) => {
    const call = grants.has(temp.ws, BOB_MEMBER, "my_notes"); // Bob's call through my_notes
    await held.reached;
    expect(await grants.remove(temp.ws, (g) => g.principalId === BOB, NO_CALLER)).toBe(1);
    held.release();
    expect(await call).toBe(true); // read before the revoke: answered as it stood then
  });

  expect(await grants.has(temp.ws, BOB_MEMBER, "my_notes")).toBe(false);
  expect(await grants.list(temp.ws)).toEqual([]);
});
