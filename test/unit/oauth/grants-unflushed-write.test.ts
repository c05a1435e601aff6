import { afterEach, beforeEach, expect, it } from "vitest";
import type { UserDirectory } from "../../../src/identity/users.ts";
import { newGrantId } from "../../../src/oauth/grant-tokens.ts";
import type { Grants } from "../../../src/oauth/grants.ts";
import type { StorageLayout } from "../../../src/storage/paths.ts";
import { journalDuring } from "../../helpers/fs-journal.ts";
import { newGrants, person, RESOURCE, type TestClock, tempInstance, testClock } from "./fixtures.ts";

// A grant's record is renamed into `oauth/families/`, then the folder flushed. When that flush
// failed, the grants threw though the disk held the change: a rotation answered 500 had already
// made the client's token a rotated-out one, so its retry revoked the whole grant; a revoke answered
// 500 was revoked; a create answered with an error was a live grant at the next boot. An overwrite
// that lands is done, a create undone (ADR 0166, amended 2026-12-07).

const ALICE = person("alice");
const CLIENT = "atc_0123456789abcdef0123456789abcdef";
const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });

let layout: StorageLayout;
let users: UserDirectory;
let cleanup: () => Promise<void>;
let clock: TestClock;
let grants: Grants;

beforeEach(async () => {
  ({ layout, users, cleanup } = await tempInstance());
  clock = testClock();
  grants = await reopened();
});

afterEach(() => cleanup());

async function reopened(): Promise<Grants> {
  const loaded = newGrants(layout, users, clock);
  await loaded.load();
  return loaded;
}

async function start() {
  const grantId = newGrantId();
  const { grant, refreshToken } = await grants.create(
    { grantId, clientId: CLIENT, principalId: ALICE.id, resource: RESOURCE, scopes: ["mcp:read"] },
    { refresh: true, consentedAt: clock() },
  );
  return { grant, refreshToken: refreshToken as string };
}

const folderFlushFails = (work: () => Promise<unknown>) => {
  const folder = layout.collectionDir("oauth/families");
  return journalDuring(work, { sync: (path) => (path === folder ? eio() : undefined) });
};

it("a refresh whose rotated record lands but whose folder's flush fails answers the successor, which refreshes again", async () => {
  const { grant, refreshToken } = await start();
  let successor = "";
  await folderFlushFails(async () => {
    successor = (await grants.refresh(refreshToken, { clientId: CLIENT })).refreshToken;
  });
  expect((await grants.refresh(successor, { clientId: CLIENT })).grant.grantId).toBe(grant.grantId);
  expect(grants.isRevoked(grant.grantId)).toBe(false);
});

it("a revoke whose record lands but whose folder's flush fails is done, and stays done after a restart", async () => {
  const { grant, refreshToken } = await start();
  let known: boolean | undefined;
  await folderFlushFails(async () => {
    known = await grants.revokeRefreshToken(refreshToken, CLIENT);
  });
  expect(known).toBe(true);
  expect(grants.isRevoked(grant.grantId)).toBe(true);
  expect((await reopened()).isRevoked(grant.grantId)).toBe(true);
});

it("a grant whose record lands but whose folder's flush fails is not made, now or after a restart", async () => {
  await start();
  let refusal: unknown;
  await folderFlushFails(() =>
    start().catch((error: unknown) => {
      refusal = error;
    }),
  );
  expect(refusal).toMatchObject({ code: "EIO" });
  expect(await grants.listFor(ALICE.id)).toHaveLength(1);
  expect(await (await reopened()).listFor(ALICE.id)).toHaveLength(1);
});
