import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BootError } from "../../../src/errors.ts";
import type { Principal } from "../../../src/identity/principal.ts";
import { foldEmail, UserDirectory } from "../../../src/identity/users.ts";
import { StorageLayout } from "../../../src/storage/paths.ts";
import { journalDuring } from "../../helpers/fs-journal.ts";

const ALICE: Principal = {
  id: "usr_aaaaaaaaaaaaaaaaaaaaaaaa",
  displayName: "Alice",
  email: "Alice@Example.com",
  orgRole: "member",
};

let root: string;
let layout: StorageLayout;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "atrium-users-"));
  layout = new StorageLayout(root);
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("UserDirectory", () => {
  it("stores a first-seen person's profile, and the next boot knows them", async () => {
    await new UserDirectory(layout).record(ALICE);
    const stored = JSON.parse(await readFile(join(layout.userDir(ALICE.id), "profile.json"), "utf8"));
    expect(stored).toEqual(ALICE);
    const next = new UserDirectory(layout);
    await next.load();
    expect(await next.findByEmail("  alice@EXAMPLE.com ")).toEqual(ALICE);
    expect(await next.get(ALICE.id)).toEqual(ALICE);
  });

  it("flushes a first-seen person's folder in its parent before their profile is acknowledged", async () => {
    const journal = await journalDuring(() => new UserDirectory(layout).record(ALICE));
    const made = journal.entries.flatMap((entry) => (entry.op === "mkdir" ? [entry.path] : []));
    expect(made).toContain(layout.userDir(ALICE.id));
    expect(journal.unflushedFolders()).toEqual([]);
  });

  it("folds ASCII letters only: a KELVIN SIGN address is not kate@", async () => {
    const users = new UserDirectory(layout);
    const kelvin = { ...ALICE, email: "\u212Aate@example.test" };
    await users.record(kelvin);
    expect(await users.findByEmail("kate@example.test")).toBeUndefined();
    expect(await users.findByEmail("KATE@example.test")).toBeUndefined();
    expect(await users.findByEmail("\u212Aate@EXAMPLE.test")).toEqual(kelvin);
    expect(foldEmail(" Kate@Example.TEST ")).toBe("kate@example.test");
    expect(foldEmail("\u212Aate@\u00C9xample.test")).toBe("\u212Aate@\u00C9xample.test");
  });

  it("refuses to guess between two people who signed in with the same email", async () => {
    const users = new UserDirectory(layout);
    await users.record(ALICE);
    await users.record({ ...ALICE, id: "usr_bbbbbbbbbbbbbbbbbbbbbbbb", email: "alice@example.com" });
    await expect(users.findByEmail("alice@example.com")).rejects.toMatchObject({
      status: 409,
      code: "ambiguous_email",
    });
  });

  it("rewrites the profile when the name or email changes", async () => {
    const users = new UserDirectory(layout);
    await users.record(ALICE);
    await users.record({ ...ALICE, displayName: "Alice B." });
    const stored = JSON.parse(await readFile(join(layout.userDir(ALICE.id), "profile.json"), "utf8"));
    expect(stored.displayName).toBe("Alice B.");
  });

  it("never blanks a part of the profile a credential does not state", async () => {
    const users = new UserDirectory(layout);
    await users.record({ ...ALICE, orgRole: "admin" });
    // A token with no email, name or role claim: its fallbacks change nothing stored.
    await users.record({
      ...ALICE,
      displayName: "alice-subject",
      email: null,
      orgRole: "member",
      unstated: ["displayName", "email", "orgRole"],
    });
    const stored = JSON.parse(await readFile(join(layout.userDir(ALICE.id), "profile.json"), "utf8"));
    expect(stored).toEqual({ ...ALICE, orgRole: "admin" });
    expect(await users.findByEmail("alice@example.com")).toMatchObject({ id: ALICE.id });
  });

  it("updates the parts a credential does state, and keeps the rest", async () => {
    const users = new UserDirectory(layout);
    await users.record(ALICE);
    await users.record({ ...ALICE, displayName: "Alice B.", email: null, unstated: ["email"] });
    expect(await users.get(ALICE.id)).toEqual({ ...ALICE, displayName: "Alice B." });
    // A stated absence (the provider marked the address unverified) does clear it.
    await users.record({ ...ALICE, displayName: "Alice B.", email: null });
    expect((await users.get(ALICE.id))?.email).toBeNull();
  });

  it("stores a first-seen person with the fallbacks, which a later stating credential replaces", async () => {
    const users = new UserDirectory(layout);
    await users.record({ ...ALICE, displayName: "sub-1", email: null, unstated: ["displayName", "email"] });
    expect(await users.get(ALICE.id)).toEqual({ ...ALICE, displayName: "sub-1", email: null });
    await users.record(ALICE);
    expect(await users.get(ALICE.id)).toEqual(ALICE);
  });

  it("records a reactivation, and reactivating someone who is active changes nothing", async () => {
    const users = new UserDirectory(layout);
    await users.record(ALICE);
    expect(await users.setDeactivated(ALICE.id, false)).not.toHaveProperty("reactivatedAt");
    expect(users.standingOf(ALICE.id)).toEqual({});
    await users.setDeactivated(ALICE.id, true);
    const back = await users.setDeactivated(ALICE.id, false);
    expect(back.deactivatedAt).toBeUndefined();
    expect(users.standingOf(ALICE.id)).toEqual({
      standingId: back.standingId,
      reactivatedAt: Date.parse(back.reactivatedAt as string),
    });
    expect(back.standingId).toMatch(/^stn_[0-9a-f]{32}$/);
  });

  it("draws a new standing id at each reactivation, kept in the profile so a restart reads the same one", async () => {
    const users = new UserDirectory(layout);
    await users.record(ALICE);
    await users.setDeactivated(ALICE.id, true);
    // A deactivation draws none: the person's session still names them, for the 403 page.
    expect(users.standingOf(ALICE.id).standingId).toBeUndefined();
    const first = await users.setDeactivated(ALICE.id, false);
    await users.setDeactivated(ALICE.id, true);
    const second = await users.setDeactivated(ALICE.id, false);
    expect(second.standingId).not.toBe(first.standingId);
    const restarted = new UserDirectory(layout);
    await restarted.load();
    expect(restarted.standingOf(ALICE.id).standingId).toBe(second.standingId);
    expect(await restarted.get(ALICE.id)).toMatchObject({ standingId: second.standingId });
  });

  it.each([
    ["a number", 2],
    ["another prefix", "mbs_0123456789abcdef0123456789abcdef"],
    ["upper-case hex", "stn_0123456789ABCDEF0123456789ABCDEF"],
  ])("boot refuses a profile whose standingId is %s, naming the person", async (_label, standingId) => {
    const users = new UserDirectory(layout);
    await users.record(ALICE);
    const path = join(layout.userDir(ALICE.id), "profile.json");
    await writeFile(path, JSON.stringify({ ...ALICE, standingId }));
    const error = await new UserDirectory(layout).load().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(BootError);
    expect((error as Error).message).toContain(ALICE.id);
    expect((error as Error).message).toContain('"stn_" and 32 lowercase hex digits');
  });

  it("a write that lands and then fails its folder's flush: memory takes what the disk holds", async () => {
    const users = new UserDirectory(layout);
    await users.record(ALICE);
    const folder = layout.userDir(ALICE.id);
    const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });
    const flushFailing = (work: () => Promise<unknown>) =>
      journalDuring(work, { sync: (path) => (path === folder ? eio() : undefined) });
    await flushFailing(() =>
      expect(users.setDeactivated(ALICE.id, true)).rejects.toMatchObject({ code: "EIO" }),
    );
    // Every request checks memory: kept active, she worked on until a restart.
    expect(users.isDeactivated(ALICE.id)).toBe(true);
    await flushFailing(() =>
      expect(users.setDeactivated(ALICE.id, false)).rejects.toMatchObject({ code: "EIO" }),
    );
    expect(users.isDeactivated(ALICE.id)).toBe(false);
    expect(users.standingOf(ALICE.id)).toEqual({
      standingId: expect.stringMatching(/^stn_/),
      reactivatedAt: expect.any(Number),
    });
  });

  it("a record whose write lands and then fails its folder's flush is done; one that does not land throws", async () => {
    const users = new UserDirectory(layout);
    const folder = layout.userDir(ALICE.id);
    const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });
    // A sign-in's, and any request's: thrown, the sign-in answered 500 with its profile on disk.
    await journalDuring(() => users.record(ALICE), {
      sync: (path) => (path === folder ? eio() : undefined),
    });
    expect(await users.get(ALICE.id)).toEqual(ALICE);
    const renamed = { ...ALICE, displayName: "Alice B." };
    await journalDuring(() => expect(users.record(renamed)).rejects.toMatchObject({ code: "EIO" }), {
      sync: (path) => (path.startsWith(`${folder}/.tmp-`) ? eio() : undefined),
    });
    expect(await users.get(ALICE.id)).toEqual(ALICE);
    expect(JSON.parse(await readFile(join(folder, "profile.json"), "utf8"))).toEqual(ALICE);
  });

  it("a write whose new file's own flush fails lands nothing: memory stays", async () => {
    const users = new UserDirectory(layout);
    await users.record(ALICE);
    const folder = layout.userDir(ALICE.id);
    const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });
    await journalDuring(
      () => expect(users.setDeactivated(ALICE.id, true)).rejects.toMatchObject({ code: "EIO" }),
      { sync: (path) => (path.startsWith(`${folder}/.tmp-`) ? eio() : undefined) },
    );
    expect(users.isDeactivated(ALICE.id)).toBe(false);
  });

  it("loads with no users folder yet", async () => {
    await expect(new UserDirectory(layout).load()).resolves.toBeUndefined();
  });

  it("boot ignores dot-entries in _instance/users, as the workspace root does", async () => {
    // BUG (src/identity/users.ts:27-28): load() passes every entry of _instance/users to
    // layout.userDir, so a `.DS_Store` (or any writer's `.tmp-…`) throws InvalidPathSegment
    // and boot stops with a stack trace instead of starting.
    await new UserDirectory(layout).record(ALICE);
    await writeFile(join(layout.instanceDir(), "users", ".DS_Store"), "");
    const users = new UserDirectory(layout);
    await expect(users.load()).resolves.toBeUndefined();
    expect(await users.findByEmail(ALICE.email ?? "")).toEqual(ALICE);
  });

  it("boot refuses a stray entry in _instance/users with a BootError naming it", async () => {
    // Same bug as above: the stray surfaces as InvalidPathSegment, which cli.ts does not
    // treat as a boot problem (it prints only BootError and rethrows the rest).
    await mkdir(join(layout.instanceDir(), "users", "backup"), { recursive: true });
    const error = await new UserDirectory(layout).load().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(BootError);
    expect((error as Error).message).toContain('"backup"');
  });
});
