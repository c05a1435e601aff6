import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type SearchPage, searchConversations } from "../../../../src/platform/conversations/finder.ts";
import { INDEX_LIMITS } from "../../../../src/platform/conversations/index-limits.ts";
import type { ConversationStore } from "../../../../src/platform/conversations/store.ts";
import { openConversationStore, said } from "../../../helpers/conversation-store.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// Where a search's cursor goes on (adr/0144): a walk its budget cut short always gives one that
// walks something new, and a cursor of an index built again since is refused, not misread.

const ALICE = `usr_${"a".repeat(24)}`;
const limits = { ...INDEX_LIMITS, searchPostings: 5 };
const IDLE_DROP_MS = 11 * 60 * 1000;
let temp: TempRoot;
let time: FakeTime;

beforeEach(async () => {
  temp = await openTempRoot("search-cursor", ALICE);
  time = new FakeTime();
});
afterEach(async () => temp.remove());

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
    const store = openConversationStore(temp, time, { index: { limits } });
    for (const title of ["A", "B"]) {
      await store.create(temp.ws, ALICE, title, [said("apple")]);
      time.jump(1000);
    }
    // Ten postings of a deleted conversation above them, kept in the lists until a compaction.
    const x = await store.create(
      temp.ws,
      ALICE,
      "X",
      Array.from({ length: 10 }, (_, i) => said(`apple ${i}`)),
    );
    await store.delete(temp.ws, ALICE, x.id);
    const { pages, titles } = await pageThrough(store, "apple");
    // It met no live match, yet goes on below where its walk reached: truncated, with a cursor.
    expect(pages[0]?.results).toEqual([]);
    expect(pages[0]?.truncated).toBe(true);
    expect(pages[0]?.nextCursor).toBeDefined();
    expect(titles.sort()).toEqual(["A", "B"]);
    expect(pages.at(-1)?.truncated).toBe(false);
  });

  it("goes on below a walk in which its words met in no event", async () => {
    const store = openConversationStore(temp, time, { index: { limits } });
    await store.create(temp.ws, ALICE, "Old", [said("apple banana")]);
    time.jump(1000);
    await store.create(
      temp.ws,
      ALICE,
      "P",
      Array.from({ length: 6 }, (_, i) => said(`apple p${i}`)),
    );
    time.jump(1000);
    await store.create(
      temp.ws,
      ALICE,
      "Q",
      Array.from({ length: 6 }, (_, i) => said(`banana q${i}`)),
    );
    const { pages, titles } = await pageThrough(store, "apple banana");
    expect(pages[0]?.truncated).toBe(true);
    expect(pages[0]?.nextCursor).toBeDefined();
    expect(titles).toEqual(["Old"]);
    expect(pages.at(-1)?.truncated).toBe(false);
  });
});

/**
 * Two conversations whose appends alternate, so the index numbers their events interleaved, and
 * one built again from the logs numbers them log by log; "apple" is in every event.
 */
async function interleaved(store: ConversationStore): Promise<void> {
  const ids: string[] = [];
  for (const title of ["c0", "c1"]) {
    ids.push((await store.create(temp.ws, ALICE, title, [said("apple")])).id);
    time.jump(1000);
  }
  for (let n = 0; n < 8; n++) {
    await store.append(temp.ws, ALICE, ids[n % 2] as string, [said(`apple ${n}`)]);
    time.jump(1000);
  }
}

describe("a search cursor of an index built again from the logs", () => {
  it("is refused after a crash lost the snapshot, saying to search again", async () => {
    const store = openConversationStore(temp, time, { index: { limits } });
    await interleaved(store);
    const first = await searchConversations(store.indexes, store, temp.ws, ALICE, {
      query: "apple",
      limit: 1,
    });
    expect(first.truncated).toBe(true);
    // A crash: no snapshot was written, and the next process indexes the logs one by one. The
    // cursor's place in the lists named other events there, and paging skipped or repeated some.
    const restarted = openConversationStore(temp, time, { index: { limits } });
    await expect(
      searchConversations(restarted.indexes, restarted, temp.ws, ALICE, {
        query: "apple",
        limit: 1,
        cursor: first.nextCursor,
      }),
    ).rejects.toThrow(/rebuilt or compacted since.*search again without a cursor/);
    const again = await pageThrough(restarted, "apple");
    expect(again.titles.sort()).toEqual(["c0", "c1"]);
  });

  it("is refused after a crash left the snapshot behind the logs, and one given after is kept over an idle drop", async () => {
    const store = openConversationStore(temp, time, { index: { limits } });
    await interleaved(store);
    await store.indexes.flush();
    // Indexed after the snapshot was written: read again from the logs after the crash.
    await interleaved(store);
    const first = await searchConversations(store.indexes, store, temp.ws, ALICE, {
      query: "apple",
      limit: 1,
    });
    const crashed = openConversationStore(temp, time, { index: { limits } });
    await expect(
      searchConversations(crashed.indexes, crashed, temp.ws, ALICE, {
        query: "apple",
        limit: 1,
        cursor: first.nextCursor,
      }),
    ).rejects.toThrow("search again without a cursor");
    // Dropped idle, an index is saved whole and loaded by the instance that saved it with the same
    // numbers: the cursor holds.
    const second = await searchConversations(crashed.indexes, crashed, temp.ws, ALICE, {
      query: "apple",
      limit: 1,
    });
    await crashed.indexes.sweep(time.clock() + IDLE_DROP_MS);
    expect(crashed.indexes.loadedPartitions).toBe(0);
    const { pages } = await pageThrough(crashed, "apple", second.nextCursor);
    // Every matching event once, as one search within its budget answers them.
    const whole = openConversationStore(temp, time);
    const all = await searchConversations(whole.indexes, whole, temp.ws, ALICE, {
      query: "apple",
      limit: 100,
    });
    expect(all.truncated).toBe(false);
    expect([second, ...pages].flatMap(eventsOf).sort()).toEqual(eventsOf(all).sort());
  });

  it("is refused after a graceful restart, and one given after is kept over an idle drop", async () => {
    // The next process cannot tell a graceful stop's snapshot from one a crash left behind
    // events numbered after it: it numbers anew. Its own save, at the idle drop, it can.
    const store = openConversationStore(temp, time, { index: { limits } });
    await interleaved(store);
    const first = await searchConversations(store.indexes, store, temp.ws, ALICE, {
      query: "apple",
      limit: 1,
    });
    await store.indexes.stop();
    const restarted = openConversationStore(temp, time, { index: { limits } });
    await expect(
      searchConversations(restarted.indexes, restarted, temp.ws, ALICE, {
        query: "apple",
        limit: 1,
        cursor: first.nextCursor,
      }),
    ).rejects.toThrow(/restarted.*search again without a cursor/);
    // Loaded whole from the snapshot, nothing changed: only the drop writes its new generation.
    const second = await searchConversations(restarted.indexes, restarted, temp.ws, ALICE, {
      query: "apple",
      limit: 1,
    });
    expect(second.index.logsRead).toBe(1);
    await restarted.indexes.sweep(time.clock() + IDLE_DROP_MS);
    expect(restarted.indexes.loadedPartitions).toBe(0);
    const { pages } = await pageThrough(restarted, "apple", second.nextCursor);
    // Every matching event once, as one search within its budget answers them.
    await restarted.indexes.stop();
    const whole = openConversationStore(temp, time);
    const all = await searchConversations(whole.indexes, whole, temp.ws, ALICE, {
      query: "apple",
      limit: 100,
    });
    expect(all.truncated).toBe(false);
    expect([second, ...pages].flatMap(eventsOf).sort()).toEqual(eventsOf(all).sort());
  });

  it("is refused after a crash whose snapshot is not behind any log, though events were numbered after it", async () => {
    // The snapshot was saved, B was made (numbered) and deleted before the next save, and a cursor
    // given out: after a crash, the load read no log, kept the generation, and new events took B's
    // numbers, which the old cursor walked, answering a conversation made after the restart.
    const one = { ...INDEX_LIMITS, searchPostings: 1 };
    const store = openConversationStore(temp, time, { index: { limits: one } });
    await store.create(temp.ws, ALICE, "A", [said("apple one")]);
    time.jump(1000);
    await store.indexes.flush();
    const b = await store.create(temp.ws, ALICE, "B", [said("apple two"), said("apple three")]);
    time.jump(1000);
    const first = await searchConversations(store.indexes, store, temp.ws, ALICE, {
      query: "apple",
      limit: 1,
    });
    expect(first.nextCursor).toBeDefined();
    await store.delete(temp.ws, ALICE, b.id);
    // A crash: no graceful stop, and the snapshot is the one saved before B.
    const restarted = openConversationStore(temp, time, { index: { limits: one } });
    const loaded = await searchConversations(restarted.indexes, restarted, temp.ws, ALICE, { query: "pear" });
    expect(loaded.index.logsRead).toBe(0);
    time.jump(1000);
    await restarted.create(temp.ws, ALICE, "C", [said("apple later")]);
    await expect(
      searchConversations(restarted.indexes, restarted, temp.ws, ALICE, {
        query: "apple",
        limit: 1,
        cursor: first.nextCursor,
      }),
    ).rejects.toThrow(/restarted.*search again without a cursor/);
    await restarted.indexes.stop();
  });

  it("is refused after a compaction numbered the events again, saying so", async () => {
    const store = openConversationStore(temp, time, { index: { limits } });
    await interleaved(store);
    const first = await searchConversations(store.indexes, store, temp.ws, ALICE, {
      query: "apple",
      limit: 1,
    });
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
    );
    await store.delete(temp.ws, ALICE, big.id);
    await expect(
      searchConversations(store.indexes, store, temp.ws, ALICE, {
        query: "apple",
        limit: 1,
        cursor: first.nextCursor,
      }),
    ).rejects.toThrow(/rebuilt or compacted since.*search again without a cursor/);
    await store.indexes.stop();
  });
});
