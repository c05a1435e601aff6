import { readdir } from "node:fs/promises";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Forbidden, NotFound } from "../../../src/errors.ts";
import type { Principal } from "../../../src/identity/principal.ts";
import type { UserDirectory } from "../../../src/identity/users.ts";
import { EventBus } from "../../../src/kernel/events.ts";
import { createLogger } from "../../../src/log.ts";
import type { StorageLayout } from "../../../src/storage/paths.ts";
import { JsonRecords } from "../../../src/storage/records.ts";
import { Invitations } from "../../../src/workspace/invitations.ts";
import { WorkspaceStore } from "../../../src/workspace/store.ts";
import { type TestClock, tempInstance, testClock, person as withoutEmail } from "../oauth/fixtures.ts";

// A removal ends the person's pending invitations to the workspace (ADR 0131) however it is
// asked of the store: the routes, leaving from the home page, or a direct call. Before, only
// the routes' helper wrapped the store's write in Invitations.leave, and a direct call left a
// leftover its removed invitee could accept to come back.

function person(name: string): Principal {
  return { ...withoutEmail(name), email: `${name}@example.test` };
}

const ADMIN = person("admin");
const ALICE = person("alice");
const BOB = person("bob");

let layout: StorageLayout;
let users: UserDirectory;
let cleanup: () => Promise<void>;
let clock: TestClock;
let store: WorkspaceStore;
let invitations: Invitations;
let ws: string;
let other: string;

beforeEach(async () => {
  ({ layout, users, cleanup } = await tempInstance());
  clock = testClock();
  for (const p of [ADMIN, ALICE, BOB]) await users.record(p);
  store = new WorkspaceStore(layout, new EventBus(createLogger("silent")), clock);
  await store.load();
  invitations = new Invitations(layout, users, store, createLogger("silent"), clock);
  store.endsWithMembership(invitations);
  await invitations.load();
  ws = (await store.create("Team", ADMIN.id)).id;
  other = (await store.create("Other", ADMIN.id)).id;
});

afterEach(() => cleanup());

const onDisk = async () => (await readdir(layout.collectionDir("invitations"))).sort();
const join = (invitation: { workspaceId: string; role: "admin" | "member" }, who: Principal) =>
  store.addMember(invitation.workspaceId, who.id, invitation.role);

/** Alice is a member of `ws` and still holds an invitation to it by address, as admin, and one by id elsewhere. */
async function aliceWithLeftovers() {
  const leftover = await invitations.create(ws, { email: "alice@example.test" }, "admin", ADMIN.id);
  const elsewhere = await invitations.create(other, { principalId: ALICE.id }, "member", ADMIN.id);
  const bobs = await invitations.create(ws, { principalId: BOB.id }, "member", ADMIN.id);
  // Joined behind the invitations' back (a direct store call), so nothing ended the leftover.
  await store.addMember(ws, ALICE.id, "member");
  return { leftover, elsewhere, bobs };
}

describe("WorkspaceStore.removeMember ends the person's invitations to the workspace", () => {
  for (const [how, by] of [
    ["removed by an admin", ADMIN],
    ["leaving", ALICE],
  ] as const) {
    it(`${how}, asked of the store directly: the leftover is gone, nobody else's`, async () => {
      const { leftover, elsewhere, bobs } = await aliceWithLeftovers();
      await store.removeMember(ws, ALICE.id, by.id);
      expect(store.roleOf(ws, ALICE.id)).toBeUndefined();
      await expect(invitations.accept(leftover.id, ALICE.id, (i) => join(i, ALICE))).rejects.toBeInstanceOf(
        NotFound,
      );
      expect(store.roleOf(ws, ALICE.id)).toBeUndefined();
      expect((await invitations.forPerson(ALICE.id)).map((i) => i.id)).toEqual([elsewhere.id]);
      expect(await onDisk()).toEqual([`${bobs.id}.json`, `${elsewhere.id}.json`].sort());
    });
  }

  it("a refused removal ends nothing", async () => {
    const { leftover, elsewhere, bobs } = await aliceWithLeftovers();
    await store.addMember(ws, BOB.id, "member");
    await expect(store.removeMember(ws, ALICE.id, BOB.id)).rejects.toBeInstanceOf(Forbidden);
    expect(store.roleOf(ws, ALICE.id)).toBe("member");
    expect(await onDisk()).toEqual([`${leftover.id}.json`, `${bobs.id}.json`, `${elsewhere.id}.json`].sort());
  });

  it("a removal whose revocation fails is refused whole: still a member, and the retry ends the leftover", async () => {
    const { leftover, elsewhere, bobs } = await aliceWithLeftovers();
    const refused = vi
      .spyOn(JsonRecords.prototype, "delete")
      .mockRejectedValueOnce(Object.assign(new Error("EIO: i/o error, unlink"), { code: "EIO" }));
    try {
      await expect(store.removeMember(ws, ALICE.id, ADMIN.id)).rejects.toMatchObject({ code: "EIO" });
    } finally {
      refused.mockRestore();
    }
    // Written before the revocation, she was out, the retry member_not_found, and the leftover
    // hers to accept for its 14 days: housekeeping revokes only those naming a member.
    expect(store.roleOf(ws, ALICE.id)).toBe("member");
    await store.removeMember(ws, ALICE.id, ADMIN.id);
    expect(store.roleOf(ws, ALICE.id)).toBeUndefined();
    await expect(invitations.accept(leftover.id, ALICE.id, (i) => join(i, ALICE))).rejects.toBeInstanceOf(
      NotFound,
    );
    expect(store.roleOf(ws, ALICE.id)).toBeUndefined();
    expect(await onDisk()).toEqual([`${bobs.id}.json`, `${elsewhere.id}.json`].sort());
  });
});
