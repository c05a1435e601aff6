import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type SearchPage, searchConversations } from "../../../../src/platform/conversations/finder.ts";
import { INDEX_LIMITS } from "../../../../src/platform/conversations/index-limits.ts";
import type { ConversationStore } from "../../../../src/platform/conversations/store.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import {
  cursorOverDeleted,
  dropIdle,
  expectRefusedAfterC,
  openConversationStore,
  removedApplePostings,
  said,
  withConversationStore,
} from "../../../helpers/conversation-store.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// Where a search's cursor goes on (adr/0144): a walk its budget cut short always gives one that
// walks something new, and a cursor of an index built again since is refused, not misread.

const ALICE = `usr_${"a".repeat(24)}`;
const limits = { ...INDEX_LIMITS, searchPostings: 5 };
let temp: TempRoot;
let time: FakeTime;

beforeEach(async () => {
  temp = await openTempRoot("search-cursor", ALICE);
  time = new FakeTime();
});
afterEach(async () => temp.remove());

type Options = Parameters<typeof openConversationStore>[2];

/** A store that is never stopped: the process of a crash. */
function openStore(options: Options = { index: { limits } }): ConversationStore {
  return openConversationStore(temp, time, options);
}

/** Runs `work` on a store that stops gracefully after it. */
function withStore<T>(
  work: (store: ConversationStore) => Promise<T>,
  options: Options = { index: { limits } },
) {
  return withConversationStore(temp, time, options, work);
}

/** One page, one conversation, of a search of "apple" from `cursor`. */
function searchApple(store: ConversationStore, cursor?: string): Promise<SearchPage> {
  return searchConversations(store.indexes, store, temp.ws, ALICE, { query: "apple", limit: 1, cursor });
}

/** Pages on from `cursor` in `store`: refused, saying `why`. */
async function expectRefused(store: ConversationStore, cursor: string | undefined, why: string | RegExp) {
  await expect(searchApple(store, cursor)).rejects.toThrow(why);
}

/** The pages together answer every matching event once, as one search within its budget answers them. */
async function expectEveryEventOnce(pages: SearchPage[]): Promise<void> {
  const all = await withStore(
    (whole) => searchConversations(whole.indexes, whole, temp.ws, ALICE, { query: "apple", limit: 100 }),
    {},
  );
  expect(all.truncated).toBe(false);
  expect(pages.flatMap(eventsOf).sort()).toEqual(eventsOf(all).sort());
}

/** `conversation/seq` of each matching event a page answers. */
function eventsOf(page: SearchPage): string[] {
  return page.results.flatMap((r) => r.events.map((e) => `${r.conversation.id}/${e.seq}`));
}

/** Every page of a search of `query`, one conversation a page, from `cursor` on (at most 30). */
async function pageThrough(store: ConversationStore, query: string, cursor?: string) {
  const pages: SearchPage[] = [];
  const cursors: string[] = [];
  let next = cursor;
  do {
    const page = await searchConversations(store.indexes, store, temp.ws, ALICE, {
      query,
      limit: 1,
      cursor: next,
    });
    pages.push(page);
    next = page.nextCursor;
    if (next !== undefined) cursors.push(next);
  } while (next !== undefined && pages.length < 30);
  // Each cursor leads somewhere new: none is given twice, and paging ends.
  expect(new Set(cursors).size).toBe(cursors.length);
  expect(pages.at(-1)?.nextCursor).toBeUndefined();
  const titles = pages.flatMap((page) => page.results.map((r) => r.conversation.title));
  return { pages, titles };
}

describe("a search its budget cut short", () => {
  it("goes on below removed postings that took a first page's whole budget", async () => {
    await withStore(async (store) => {
      for (const title of ["A", "B"]) {
        await store.create(temp.ws, ALICE, title, [said("apple")], NO_CALLER);
        time.jump(1000);
      }
      // Ten postings of a deleted conversation above them, kept in the lists until a compaction.
      await removedApplePostings(store, temp, ALICE);
      const { pages, titles } = await pageThrough(store, "apple");
      // It met no live match, yet goes on below where its walk reached: truncated, with a cursor.
      expect(pages[0]?.results).toEqual([]);
      expect(pages[0]?.truncated).toBe(true);
      expect(pages[0]?.nextCursor).toBeDefined();
      expect(titles.sort()).toEqual(["A", "B"]);
      expect(pages.at(-1)?.truncated).toBe(false);
    });
  });

  it("goes on below a walk in which its words met in no event", async () => {
    await withStore(async (store) => {
      await store.create(temp.ws, ALICE, "Old", [said("apple banana")], NO_CALLER);
      time.jump(1000);
      const six = (text: string) => Array.from({ length: 6 }, (_, i) => said(`${text}${i}`));
      await store.create(temp.ws, ALICE, "P", six("apple p"), NO_CALLER);
      time.jump(1000);
      await store.create(temp.ws, ALICE, "Q", six("banana q"), NO_CALLER);
      const { pages, titles } = await pageThrough(store, "apple banana");
      expect(pages[0]?.truncated).toBe(true);
      expect(pages[0]?.nextCursor).toBeDefined();
      expect(titles).toEqual(["Old"]);
      expect(pages.at(-1)?.truncated).toBe(false);
    });
  });
});

/**
 * Two conversations whose appends alternate, so the index numbers their events interleaved, and
 * one built again from the logs numbers them log by log; "apple" is in every event.
 */
async function interleaved(store: ConversationStore): Promise<void> {
  const ids: string[] = [];
  for (const title of ["c0", "c1"]) {
    ids.push((await store.create(temp.ws, ALICE, title, [said("apple")], NO_CALLER)).id);
    time.jump(1000);
  }
  for (let n = 0; n < 8; n++) {
    await store.append(temp.ws, ALICE, ids[n % 2] as string, [said(`apple ${n}`)], NO_CALLER);
    time.jump(1000);
  }
}

describe("a search cursor of an index built again from the logs", () => {
  it("is refused after a crash lost the snapshot, saying to search again", async () => {
    const store = openStore();
    await interleaved(store);
    const first = await searchApple(store);
    expect(first.truncated).toBe(true);
    // A crash: no snapshot was written, and the next process indexes the logs one by one. The
    // cursor's place in the lists named other events there, and paging skipped or repeated some.
    await withStore(async (restarted) => {
      await expectRefused(
        restarted,
        first.nextCursor,
        /rebuilt or compacted since.*search again without a cursor/,
      );
      const again = await pageThrough(restarted, "apple");
      expect(again.titles.sort()).toEqual(["c0", "c1"]);
    });
  });

  it("is refused after a crash left the snapshot behind the logs, and one given after is kept over an idle drop", async () => {
    const store = openStore();
    await interleaved(store);
    await store.indexes.flush();
    // Indexed after the snapshot was written: read again from the logs after the crash.
    await interleaved(store);
    const first = await searchApple(store);
    await withStore(async (crashed) => {
      await expectRefused(crashed, first.nextCursor, "search again without a cursor");
      // Dropped idle, an index is saved whole and loaded by the instance that saved it with the
      // same numbers: the cursor holds.
      const second = await searchApple(crashed);
      await dropIdle(crashed, time);
      const { pages } = await pageThrough(crashed, "apple", second.nextCursor);
      await expectEveryEventOnce([second, ...pages]);
    });
  });

  it("is refused after a graceful restart, and one given after is kept over an idle drop", async () => {
    // The next process cannot tell a graceful stop's snapshot from one a crash left behind
    // events numbered after it: it numbers anew. Its own save, at the idle drop, it can.
    const first = await withStore(async (store) => {
      await interleaved(store);
      return searchApple(store);
    });
    await withStore(async (restarted) => {
      await expectRefused(restarted, first.nextCursor, /restarted.*search again without a cursor/);
      // Loaded whole from the snapshot, nothing changed: only the drop writes its new generation.
      const second = await searchApple(restarted);
      expect(second.index.logsRead).toBe(1);
      await dropIdle(restarted, time);
      const { pages } = await pageThrough(restarted, "apple", second.nextCursor);
      await restarted.indexes.stop();
      await expectEveryEventOnce([second, ...pages]);
    });
  });

  it("is refused after a crash whose snapshot is not behind any log, though events were numbered after it", async () => {
    // The snapshot was saved, B was made (numbered) and deleted before the next save, and a cursor
    // given out: after a crash, the load read no log, kept the generation, and new events took B's
    // numbers, which the old cursor walked, answering a conversation made after the restart.
    const one = { index: { limits: { ...INDEX_LIMITS, searchPostings: 1 } } };
    const cursor = await cursorOverDeleted(openStore(one), temp, time, ALICE);
    // A crash: no graceful stop, and the snapshot is the one saved before B.
    await withStore(async (restarted) => {
      await expectRefusedAfterC(
        restarted,
        temp,
        time,
        ALICE,
        cursor,
        /restarted.*search again without a cursor/,
      );
    }, one);
  });

  it("is refused after a compaction numbered the events again, saying so", async () => {
    await withStore(async (store) => {
      await interleaved(store);
      const first = await searchApple(store);
      expect(first.nextCursor).toBeDefined();
      // Over 1 MiB of words deleted, and most numbers a removed conversation's: the compaction that
      // drops its postings numbers the rest again. The refusal said the index was built again from
      // the logs after a crash, which is not what happened.
      let word = 1e8;
      const distinct = () => Array.from({ length: 300 }, () => (word++).toString(36)).join(" ");
      const big = await store.create(
        temp.ws,
        ALICE,
        "big",
        Array.from({ length: 60 }, () => said(distinct())),
        NO_CALLER,
      );
      await store.delete(temp.ws, ALICE, big.id, NO_CALLER);
      await expectRefused(
        store,
        first.nextCursor,
        /rebuilt or compacted since.*search again without a cursor/,
      );
    });
  });
});
