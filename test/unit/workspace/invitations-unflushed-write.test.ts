import { afterEach, beforeEach, expect, it } from "vitest";
import type { Principal } from "../../../src/identity/principal.ts";
import type { UserDirectory } from "../../../src/identity/users.ts";
import { WrittenNotFlushed } from "../../../src/storage/atomic.ts";
import type { StorageLayout } from "../../../src/storage/paths.ts";
import { Invitations } from "../../../src/workspace/invitations.ts";
import type { Workspace } from "../../../src/workspace/model.ts";
import { journalDuring } from "../../helpers/fs-journal.ts";
import { memoryLog } from "../../helpers/memory-log.ts";
import { type TestClock, tempInstance, testClock, person as withoutEmail } from "../oauth/fixtures.ts";

// An invitation's record is renamed into `invitations/`, then the folder flushed. When that flush
// failed, the send was answered with an error and the index never held it, yet its file stayed: the
// next boot listed, counted and let the invitee accept an invitation its sender was told was not
// sent. A create that lands and fails its flush is undone (ADR 0166, amended 2026-12-07).

const WS = "ws_0123456789abcdef";
const person = (name: string): Principal => ({ ...withoutEmail(name), email: `${name}@example.test` });
const ADMIN = person("admin");
const ALICE = person("alice");
const BOB = person("bob");
const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });

let layout: StorageLayout;
let users: UserDirectory;
let cleanup: () => Promise<void>;
let clock: TestClock;
const admins: Workspace = {
  id: WS,
  name: WS,
  createdAt: "",
  updatedAt: "",
  members: [{ principalId: ADMIN.id, role: "admin", addedAt: "" }],
};
const memberships = { get: (id: string) => (id === WS ? admins : undefined) };
const open = async () => {
  const invitations = new Invitations(layout, users, memberships, memoryLog().log, clock);
  await invitations.load();
  return invitations;
};

beforeEach(async () => {
  ({ layout, users, cleanup } = await tempInstance());
  clock = testClock();
  for (const p of [ADMIN, ALICE, BOB]) await users.record(p);
});

afterEach(() => cleanup());

it("an invitation whose record lands but whose folder's flush fails is not sent, now or after a restart", async () => {
  const invitations = await open();
  const sent = await invitations.create(WS, { principalId: ALICE.id }, "member", ADMIN.id);
  const folder = layout.collectionDir("invitations");

  let refusal: unknown;
  await journalDuring(
    () =>
      invitations.create(WS, { principalId: BOB.id }, "member", ADMIN.id).catch((error: unknown) => {
        refusal = error;
      }),
    { sync: (path) => (path === folder ? eio() : undefined) },
  );

  expect(refusal).toMatchObject({ code: "EIO" });
  expect((await invitations.forWorkspace(WS)).map((i) => i.id)).toEqual([sent.id]);
  expect((await (await open()).forWorkspace(WS)).map((i) => i.id)).toEqual([sent.id]);
  expect(await (await open()).forPerson(BOB.id)).toEqual([]);
  // The flush's own error: nothing landed, so nothing says it did.
  expect(refusal).not.toBeInstanceOf(WrittenNotFlushed);
});
