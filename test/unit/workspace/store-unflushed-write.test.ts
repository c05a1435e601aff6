import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { NotFound, WorkspaceNotFound } from "../../../src/errors.ts";
import { type AtriumEvent, EventBus } from "../../../src/kernel/events.ts";
import { createLogger } from "../../../src/log.ts";
import { StorageLayout } from "../../../src/storage/paths.ts";
import { WorkspaceStore } from "../../../src/workspace/store.ts";
import { FakeTime } from "../../helpers/fake-time.ts";
import { journalDuring } from "../../helpers/fs-journal.ts";

// A write to workspace.json renames its new file into place and then flushes the folder. When
// that flush fails the write throws, yet every later write reads the new file. The index, which
// the gate and the listings read, kept the old membership until a restart: a removed admin was
// still admitted, and archive, which checked the index, let them archive (review).

const ALICE = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";
const BOB = "usr_bbbbbbbbbbbbbbbbbbbbbbbb";

let root: string;
let layout: StorageLayout;
let published: AtriumEvent[];
let store: WorkspaceStore;
let ws: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "atrium-store-"));
  layout = new StorageLayout(root);
  const bus = new EventBus(createLogger("silent"));
  store = new WorkspaceStore(layout, bus, new FakeTime().clock);
  await store.load();
  ws = (await store.create("Team", ALICE)).id;
  await store.addMember(ws, BOB, "admin");
  published = [];
  bus.subscribe({}, (event) => void published.push(event));
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });

/** Runs `work` with every flush of `path` failing, as a disk's error does. */
const failingFlushesOf = (path: (flushed: string) => boolean, work: () => Promise<unknown>) =>
  journalDuring(work, { sync: (flushed) => (path(flushed) ? eio() : undefined) });

describe("a workspace write that throws after its file is in place", () => {
  it("a removal whose folder flush fails: the index, the gate and archive know she is out", async () => {
    const folder = layout.workspaceDir(ws);
    await failingFlushesOf(
      (path) => path === folder,
      () => expect(store.removeMember(ws, BOB, ALICE)).rejects.toMatchObject({ code: "EIO" }),
    );
    expect(store.roleOf(ws, BOB)).toBeUndefined();
    expect(store.listFor(BOB)).toEqual([]);
    // What follows a removal (her streams closed, her grants ended) hears of it.
    expect(published).toEqual([{ type: "member.removed", workspaceId: ws, principalId: BOB }]);
    await expect(store.removeMember(ws, BOB, ALICE)).rejects.toBeInstanceOf(NotFound);
    await expect(store.archive(ws, BOB)).rejects.toBeInstanceOf(WorkspaceNotFound);
    expect(store.get(ws)).toBeDefined();
  });

  it("a write whose new file's own flush fails lands nothing: the index and the events stay", async () => {
    const folder = layout.workspaceDir(ws);
    await failingFlushesOf(
      (path) => path.startsWith(`${folder}/.tmp-`),
      () => expect(store.removeMember(ws, BOB, ALICE)).rejects.toMatchObject({ code: "EIO" }),
    );
    expect(store.roleOf(ws, BOB)).toBe("admin");
    expect(published).toEqual([]);
  });
});

describe("an archive whose rename lands and whose flush then fails", () => {
  for (const [after, folder] of [
    ["the root's", () => layout.root],
    ["_archive/'s", () => layout.archiveDir()],
  ] as const) {
    it(`after ${after}: the index no longer holds it, for the gate or the listings`, async () => {
      await store.archive((await store.create("Made first", ALICE)).id, ALICE);
      await failingFlushesOf(
        (path) => path === folder(),
        () => expect(store.archive(ws, ALICE)).rejects.toMatchObject({ code: "EIO" }),
      );
      expect(store.get(ws)).toBeUndefined();
      expect(store.listFor(BOB)).toEqual([]);
      expect(store.ids()).not.toContain(ws);
    });
  }
});

describe("archive asks its question of the file, under the lock", () => {
  it("an admin the file no longer lists is refused, whatever the index says", async () => {
    // Removed behind the index's back (an edit of the file): the file decides, as for every write.
    const onDisk = store.get(ws);
    if (!onDisk) throw new Error("no workspace");
    const alone = { ...onDisk, members: onDisk.members.filter((m) => m.principalId !== BOB) };
    await writeFile(layout.workspaceFile(ws), JSON.stringify(alone));
    await expect(store.archive(ws, BOB)).rejects.toBeInstanceOf(WorkspaceNotFound);
    await store.archive(ws, ALICE);
    expect(store.get(ws)).toBeUndefined();
  });

  it("a workspace.json that does not read is still archivable, by an admin the index lists", async () => {
    await writeFile(layout.workspaceFile(ws), "{ not json");
    await store.archive(ws, BOB);
    expect(store.get(ws)).toBeUndefined();
  });
});
