import { afterEach, beforeEach, expect, it } from "vitest";
import { type ConnectionGrant, GrantStore } from "../../../../src/platform/connections/grants.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import type { Member } from "../../../../src/workspace/model.ts";
import { journalDuring } from "../../../helpers/fs-journal.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// A revoke writes grants.json (renamed into place, then its folder flushed). When the flush failed
// after the rename, the store kept the grants it replaced, and has() trusts a cached "yes": the
// holder's personal connection went on acting in the shared workspace, though the disk, and every
// restart, held it revoked. An overwrite that lands is held as landed, and done (ADR 0166).

const OWNER = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";
const BOB = "usr_bbbbbbbbbbbbbbbbbbbbbbbb";
const BOB_MEMBER: Member = { principalId: BOB, role: "member", addedAt: "2026-01-01T00:00:00.000Z" };
const GRANT: ConnectionGrant = {
  principalId: BOB,
  connection: "my_notes",
  grantedBy: OWNER,
  grantedAt: "2026-01-02T00:00:00.000Z",
};
const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });
let temp: TempRoot;

beforeEach(async () => {
  temp = await openTempRoot("grants-unflushed-write", OWNER);
});

afterEach(async () => {
  await temp.remove();
});

it("a revoke whose grants.json lands but whose folder's flush fails is done, and the grant is no longer honoured", async () => {
  const grants = new GrantStore(temp.layout.partition("connections"));
  await grants.add(temp.ws, GRANT, BOB_MEMBER, NO_CALLER);
  expect(await grants.has(temp.ws, BOB_MEMBER, "my_notes")).toBe(true);
  const folder = temp.layout.partition("connections").dir(temp.ws);

  let revoked: number | undefined;
  await journalDuring(
    async () => {
      revoked = await grants.remove(temp.ws, (g) => g.principalId === BOB, NO_CALLER);
    },
    { sync: (path) => (path === folder ? eio() : undefined) },
  );

  expect(revoked).toBe(1);
  expect(await grants.has(temp.ws, BOB_MEMBER, "my_notes")).toBe(false);
  expect(await grants.list(temp.ws)).toEqual([]);
});
