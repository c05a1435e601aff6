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
import {
  listConversations,
  type SearchPage,
  searchConversations,
} from "../../../../src/platform/conversations/finder.ts";
import { INDEX_LIMITS } from "../../../../src/platform/conversations/index-limits.ts";
import { ResumableSnapshots } from "../../../../src/platform/conversations/resumable-snapshots.ts";
import type { ConversationStore } from "../../../../src/platform/conversations/store.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import {
  cursorOverDeleted,
  dropIdle,
  expectRefusedAfterC,
  said,
  withConversationStore,
} from "../../../helpers/conversation-store.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// Which snapshot a load keeps the generation of (adr/0144): one this process wrote, of all it
// numbered, and no older copy of it; the snapshot names its writer, so this costs no memory per
// partition and an unchanged partition's snapshot is written once per process.

const ALICE = `usr_${"a".repeat(24)}`;
const one = { ...INDEX_LIMITS, searchPostings: 1 };
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

/** The snapshot as written: a rewrite of the same text still changes its inode or time. */
async function snapshotWritten(): Promise<string> {
  const [info, text] = await Promise.all([stat(snapshotPath()), readFile(snapshotPath(), "utf8")]);
  return `${info.ino}:${info.mtimeMs}:${text}`;
}

/** Runs `work` on a store, of one posting a search unless `options` say otherwise, that stops gracefully after it. */
function withStore<T>(
  work: (store: ConversationStore) => Promise<T>,
  options: Parameters<typeof withConversationStore>[2] = { index: { limits: one } },
): Promise<T> {
  return withConversationStore(temp, time, options, work);
}

/** A process that makes a conversation titled each of `titles`, saying "apple <title>", and stops gracefully. */
async function previousProcess(titles: string[]): Promise<void> {
  await withStore(async (first) => {
    for (const title of titles) {
      await first.create(temp.ws, ALICE, title, [said(`apple ${title}`)], NO_CALLER);
      time.jump(1000);
    }
  });
}

/** One page, one conversation, of a search of "apple" from `cursor`. */
function searchApple(store: ConversationStore, cursor?: string): Promise<SearchPage> {
  return searchConversations(store.indexes, store, temp.ws, ALICE, { query: "apple", limit: 1, cursor });
}

/**
 * Gives a cursor over B, deleted (cursorOverDeleted), runs `meanwhile` (the drop, and what befalls
 * the snapshot around it), then expects the cursor refused once C is made (expectRefusedAfterC).
 */
async function expectCursorRefusedAfter(
  meanwhile: (store: ConversationStore) => Promise<void>,
): Promise<void> {
  await withStore(async (store) => {
    const cursor = await cursorOverDeleted(store, temp, time, ALICE);
    await meanwhile(store);
    await expectRefusedAfterC(store, temp, time, ALICE, cursor, "search again without a cursor");
  });
}

/**
 * Pages once, then drops the partition idle and lists it again `cycles` times: no drop after the
 * first writes the snapshot again (`label` names the cycle), and the page's cursor still gives
 * the next conversation. Gives the snapshot the first drop left.
 */
async function droppedAgainAndAgain(
  store: ConversationStore,
  cycles: number,
  label: string,
): Promise<string> {
  const page = await searchApple(store);
  await dropIdle(store, time);
  const once = await snapshotWritten();
  for (let cycle = 0; cycle < cycles; cycle += 1) {
    await listConversations(store.indexes, temp.ws, ALICE, {});
    await dropIdle(store, time);
    expect(await snapshotWritten(), `${label}cycle ${cycle}`).toBe(once);
  }
  const rest = await searchApple(store, page.nextCursor);
  expect(rest.results).toHaveLength(1);
  return once;
}

describe("a load of a snapshot this process wrote", () => {
  it("refuses an old cursor after a drop whose save failed once B was made and deleted", async () => {
    await expectCursorRefusedAfter(async (store) => {
      // The drop's save fails (a folder where the snapshot goes); the snapshot before B comes back.
      await rename(snapshotPath(), `${snapshotPath()}.aside`);
      await mkdir(snapshotPath());
      await dropIdle(store, time);
      await rmdir(snapshotPath());
      await rename(`${snapshotPath()}.aside`, snapshotPath());
    });
  });

  it("refuses an old cursor when the drop found no owner folder, and the folder came back", async () => {
    await expectCursorRefusedAfter(async (store) => {
      // Moved away (an operator's move) while B's numbers are unsaved: the drop's save meets ENOENT.
      await rename(ownerDir(), `${ownerDir()}.aside`);
      await dropIdle(store, time);
      await rename(`${ownerDir()}.aside`, ownerDir());
    });
  });

  it("refuses an old cursor when an older copy of the snapshot is put back", async () => {
    await expectCursorRefusedAfter(async (store) => {
      // A copy of the snapshot saved before B, taken by an operator while the process runs.
      await copyFile(snapshotPath(), `${snapshotPath()}.copy`);
      // Saved with B's slots numbered at the idle drop, then the older copy put back.
      await dropIdle(store, time);
      await copyFile(`${snapshotPath()}.copy`, snapshotPath());
    });
  });
});

describe("an unchanged partition dropped and loaded again and again", () => {
  it("has its snapshot written at most once per process, and a cursor kept throughout", async () => {
    await previousProcess(["A", "B", "C"]);
    for (const run of [1, 2]) {
      await withStore(async (store) => {
        const before = await snapshotWritten();
        // Another process's snapshot: a new generation, written once by the first drop.
        const once = await droppedAgainAndAgain(store, 5, `process ${run}, `);
        expect(once, `process ${run}`).not.toBe(before);
      });
    }
  });
});

describe("a partition whose log ends in a torn line (a crash mid-append)", () => {
  it("has its snapshot written at most once per process, and a cursor kept throughout", async () => {
    await previousProcess(["A", "B"]);
    const log = (await readdir(ownerDir())).find((name) => name.endsWith(".jsonl"));
    await appendFile(join(ownerDir(), log ?? ""), '{"type":"message","seq":2,"ro');
    await withStore(async (store) => {
      // The torn tail is read at each load, a few bytes, and adds no event.
      expect(await store.indexes.read(temp.ws, ALICE, (view) => view.logsRead)).toBe(1);
      await droppedAgainAndAgain(store, 3, "");
    });
  });
});

describe("the snapshots a process resumes", () => {
  it("reads a version 4 snapshot written before it named its writer, as another process's", async () => {
    const before = await withStore(async (first) => {
      await first.create(temp.ws, ALICE, "A", [said("apple")], NO_CALLER);
      await first.create(temp.ws, ALICE, "B", [said("apple")], NO_CALLER);
      return searchApple(first);
    });
    const [header, ...rest] = (await readFile(snapshotPath(), "utf8")).split("\n");
    expect(JSON.parse(header ?? "")).toEqual({ version: 4, writer: expect.any(String) });
    await writeFile(snapshotPath(), ['{"version":4}', ...rest].join("\n"));
    await withStore(async (store) => {
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
    }, {});
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
