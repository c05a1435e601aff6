import {
  appendFile,
  copyFile,
  mkdir,
  readdir,
  readFile,
  rename,
  rmdir,
  stat,
  writeFile,
} from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SNAPSHOT_FILE } from "../../../../src/platform/conversations/conversation-indexes.ts";
import { listConversations, searchConversations } from "../../../../src/platform/conversations/finder.ts";
import { INDEX_LIMITS } from "../../../../src/platform/conversations/index-limits.ts";
import { ResumableSnapshots } from "../../../../src/platform/conversations/resumable-snapshots.ts";
import type { ConversationStore } from "../../../../src/platform/conversations/store.ts";
import { openConversationStore, said } from "../../../helpers/conversation-store.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// Which snapshot a load keeps the generation of (adr/0144): one this process wrote, of all it
// numbered, and no older copy of it; the snapshot names its writer, so this costs no memory per
// partition and an unchanged partition's snapshot is written once per process.

const ALICE = `usr_${"a".repeat(24)}`;
const one = { ...INDEX_LIMITS, searchPostings: 1 };
const IDLE_DROP_MS = 11 * 60 * 1000;
let temp: TempRoot;
let time: FakeTime;

beforeEach(async () => {
  temp = await openTempRoot("resumable-snapshots", ALICE);
  time = new FakeTime();
});
afterEach(async () => temp.remove());

function ownerDir(): string {
  return temp.layout.partition("conversations").ownerDir(temp.ws, ALICE);
}

function snapshotPath(): string {
  return join(ownerDir(), SNAPSHOT_FILE);
}

async function dropIdle(store: ConversationStore): Promise<void> {
  await store.indexes.sweep(time.clock() + IDLE_DROP_MS);
  expect(store.indexes.loadedPartitions).toBe(0);
}

/**
 * A is saved, B made (numbered) and a cursor given over both, then B deleted: a snapshot this
 * process wrote before B is behind numbers the cursor walks, though no log is.
 */
async function cursorOverDeleted(store: ConversationStore): Promise<string> {
  await store.create(temp.ws, ALICE, "A", [said("apple one")]);
  time.jump(1000);
  await store.indexes.flush();
  const b = await store.create(temp.ws, ALICE, "B", [said("apple two"), said("apple three")]);
  time.jump(1000);
  const first = await searchConversations(store.indexes, store, temp.ws, ALICE, { query: "apple", limit: 1 });
  expect(first.nextCursor).toBeDefined();
  await store.delete(temp.ws, ALICE, b.id);
  return first.nextCursor ?? "";
}

/** Loads the partition reading no log, makes C, and pages on from `cursor`: it must be refused. */
async function expectRefusedAfterC(store: ConversationStore, cursor: string): Promise<void> {
  const probe = await searchConversations(store.indexes, store, temp.ws, ALICE, { query: "pear" });
  expect(probe.index.logsRead).toBe(0);
  time.jump(1000);
  await store.create(temp.ws, ALICE, "C", [said("apple later")]);
  // Kept, the generation would let C take B's numbers, and the cursor would answer C, made after it.
  await expect(
    searchConversations(store.indexes, store, temp.ws, ALICE, { query: "apple", limit: 1, cursor }),
  ).rejects.toThrow("search again without a cursor");
}

describe("a load of a snapshot this process wrote", () => {
  it("refuses an old cursor after a drop whose save failed once B was made and deleted", async () => {
    const store = openConversationStore(temp, time, { index: { limits: one } });
    const cursor = await cursorOverDeleted(store);
    // The drop's save fails (a folder where the snapshot goes); the snapshot before B comes back.
    await rename(snapshotPath(), `${snapshotPath()}.aside`);
    await mkdir(snapshotPath());
    await dropIdle(store);
    await rmdir(snapshotPath());
    await rename(`${snapshotPath()}.aside`, snapshotPath());
    await expectRefusedAfterC(store, cursor);
    await store.indexes.stop();
  });

  it("refuses an old cursor when the drop found no owner folder, and the folder came back", async () => {
    const store = openConversationStore(temp, time, { index: { limits: one } });
    const cursor = await cursorOverDeleted(store);
    // Moved away (an operator's move) while B's numbers are unsaved: the drop's save meets ENOENT.
    await rename(ownerDir(), `${ownerDir()}.aside`);
    await dropIdle(store);
    await rename(`${ownerDir()}.aside`, ownerDir());
    await expectRefusedAfterC(store, cursor);
    await store.indexes.stop();
  });

  it("refuses an old cursor when an older copy of the snapshot is put back", async () => {
    const store = openConversationStore(temp, time, { index: { limits: one } });
    const cursor = await cursorOverDeleted(store);
    // A copy of the snapshot saved before B, taken by an operator while the process runs.
    await copyFile(snapshotPath(), `${snapshotPath()}.copy`);
    // Saved with B's slots numbered at the idle drop, then the older copy put back.
    await dropIdle(store);
    await copyFile(`${snapshotPath()}.copy`, snapshotPath());
    await expectRefusedAfterC(store, cursor);
    await store.indexes.stop();
  });
});

describe("an unchanged partition dropped and loaded again and again", () => {
  it("has its snapshot written at most once per process, and a cursor kept throughout", async () => {
    const first = openConversationStore(temp, time, { index: { limits: one } });
    for (const title of ["A", "B", "C"]) {
      await first.create(temp.ws, ALICE, title, [said(`apple ${title}`)]);
      time.jump(1000);
    }
    await first.indexes.stop();
    const written = async () => {
      const [info, text] = await Promise.all([stat(snapshotPath()), readFile(snapshotPath(), "utf8")]);
      return `${info.ino}:${info.mtimeMs}:${text}`;
    };
    for (const run of [1, 2]) {
      const store = openConversationStore(temp, time, { index: { limits: one } });
      const before = await written();
      const page = await searchConversations(store.indexes, store, temp.ws, ALICE, {
        query: "apple",
        limit: 1,
      });
      // Another process's snapshot: a new generation, written once by the first drop.
      await dropIdle(store);
      const once = await written();
      expect(once, `process ${run}`).not.toBe(before);
      for (let cycle = 0; cycle < 5; cycle += 1) {
        await listConversations(store.indexes, temp.ws, ALICE, {});
        await dropIdle(store);
        expect(await written(), `process ${run}, cycle ${cycle}`).toBe(once);
      }
      const rest = await searchConversations(store.indexes, store, temp.ws, ALICE, {
        query: "apple",
        limit: 1,
        cursor: page.nextCursor,
      });
      expect(rest.results).toHaveLength(1);
      await store.indexes.stop();
    }
  });
});

describe("a partition whose log ends in a torn line (a crash mid-append)", () => {
  it("has its snapshot written at most once per process, and a cursor kept throughout", async () => {
    const first = openConversationStore(temp, time, { index: { limits: one } });
    for (const title of ["A", "B"]) {
      await first.create(temp.ws, ALICE, title, [said(`apple ${title}`)]);
      time.jump(1000);
    }
    await first.indexes.stop();
    const log = (await readdir(ownerDir())).find((name) => name.endsWith(".jsonl"));
    await appendFile(join(ownerDir(), log ?? ""), '{"type":"message","seq":2,"ro');
    const store = openConversationStore(temp, time, { index: { limits: one } });
    // The torn tail is read at each load, a few bytes, and adds no event.
    expect(await store.indexes.read(temp.ws, ALICE, (view) => view.logsRead)).toBe(1);
    const page = await searchConversations(store.indexes, store, temp.ws, ALICE, {
      query: "apple",
      limit: 1,
    });
    await dropIdle(store);
    const written = async () => {
      const [info, text] = await Promise.all([stat(snapshotPath()), readFile(snapshotPath(), "utf8")]);
      return `${info.ino}:${info.mtimeMs}:${text}`;
    };
    const once = await written();
    for (let cycle = 0; cycle < 3; cycle += 1) {
      await listConversations(store.indexes, temp.ws, ALICE, {});
      await dropIdle(store);
      expect(await written(), `cycle ${cycle}`).toBe(once);
    }
    const rest = await searchConversations(store.indexes, store, temp.ws, ALICE, {
      query: "apple",
      limit: 1,
      cursor: page.nextCursor,
    });
    expect(rest.results).toHaveLength(1);
    await store.indexes.stop();
  });
});

describe("the snapshots a process resumes", () => {
  it("reads a version 4 snapshot written before it named its writer, as another process's", async () => {
    const first = openConversationStore(temp, time, { index: { limits: one } });
    await first.create(temp.ws, ALICE, "A", [said("apple")]);
    await first.create(temp.ws, ALICE, "B", [said("apple")]);
    const before = await searchConversations(first.indexes, first, temp.ws, ALICE, {
      query: "apple",
      limit: 1,
    });
    await first.indexes.stop();
    const [header, ...rest] = (await readFile(snapshotPath(), "utf8")).split("\n");
    expect(JSON.parse(header ?? "")).toEqual({ version: 4, writer: expect.any(String) });
    await writeFile(snapshotPath(), ['{"version":4}', ...rest].join("\n"));
    const store = openConversationStore(temp, time);
    // Read, not rebuilt from the logs.
    const probe = await searchConversations(store.indexes, store, temp.ws, ALICE, { query: "pear" });
    expect(probe.index.logsRead).toBe(0);
    const page = await searchConversations(store.indexes, store, temp.ws, ALICE, { query: "apple" });
    expect(page.results).toHaveLength(2);
    // Another process's: a cursor its writer gave is refused, not walked in a kept generation.
    await expect(
      searchConversations(store.indexes, store, temp.ws, ALICE, {
        query: "apple",
        cursor: before.nextCursor,
      }),
    ).rejects.toThrow("search again without a cursor");
    await store.indexes.stop();
  });

  it("takes a new boot id when too many partitions were dropped unsaved, so none is resumed", () => {
    const snapshots = new ResumableSnapshots();
    const before = snapshots.bootId;
    snapshots.saved("ws/kept", "g/1");
    expect(snapshots.resumes("ws/kept", before, "g/1")).toBe(true);
    for (let i = 0; i < 1_000; i += 1) snapshots.droppedUnsaved(`ws/${i}`);
    expect(snapshots.bootId).toBe(before);
    snapshots.droppedUnsaved("ws/one-more");
    expect(snapshots.bootId).not.toBe(before);
    expect(snapshots.resumes("ws/kept", before, "g/1")).toBe(false);
    expect(snapshots.resumes("ws/0", snapshots.bootId, "g/1")).toBe(true);
  });

  it("keeps its boot id when a partition already remembered as dropped unsaved is dropped unsaved again", () => {
    const snapshots = new ResumableSnapshots();
    const before = snapshots.bootId;
    for (let i = 0; i < 1_000; i += 1) snapshots.droppedUnsaved(`ws/${i}`);
    snapshots.droppedUnsaved("ws/0");
    expect(snapshots.bootId).toBe(before);
  });
});
