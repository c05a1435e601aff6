import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  listConversations,
  type SearchPage,
  searchConversations,
} from "../../../../src/platform/conversations/finder.ts";
import { INDEX_LIMITS } from "../../../../src/platform/conversations/index-limits.ts";
import { createConversationsTools } from "../../../../src/platform/conversations/server.ts";
import type { ConversationStore } from "../../../../src/platform/conversations/store.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { openConversationStore, removedApplePostings, said } from "../../../helpers/conversation-store.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

const ALICE = `usr_${"a".repeat(24)}`;
let temp: TempRoot;
let time: FakeTime;

beforeEach(async () => {
  temp = await openTempRoot("finder", ALICE);
  time = new FakeTime();
});
afterEach(async () => temp.remove());

/** Three conversations holding "apple", a second apart, c3 the most recently updated. */
async function threeConversations(store: ConversationStore): Promise<string[]> {
  const ids: string[] = [];
  for (const title of ["c1", "c2", "c3"]) {
    ids.push((await store.create(temp.ws, ALICE, title, [said("apple")], NO_CALLER)).id);
    time.jump(1000);
  }
  return ids;
}

/**
 * Runs `append` once, right after the next read of the index answers and releases the partition's
 * lock: where a page's cursor used to be made from the index's own summaries.
 */
function appendAfterNextRead(store: ConversationStore, append: () => Promise<unknown>): void {
  const indexes = store.indexes;
  const read = indexes.read.bind(indexes);
  let done = false;
  indexes.read = async (workspaceId, ownerId, view) => {
    const answer = await read(workspaceId, ownerId, view);
    if (!done) {
      done = true;
      await append();
    }
    return answer;
  };
}

describe("a page of conversations", () => {
  it("an append racing a list moves no cursor: the next page repeats nothing", async () => {
    const store = openConversationStore(temp, time);
    const [c1, c2] = await threeConversations(store);
    appendAfterNextRead(store, () => store.append(temp.ws, ALICE, c2 as string, [said("banana")], NO_CALLER));
    const first = await listConversations(store.indexes, temp.ws, ALICE, { limit: 2 });
    expect(first.conversations.map((c) => c.title)).toEqual(["c3", "c2"]);
    // The page answers the conversation as it was read, not as the append left it.
    expect(first.conversations[1]?.eventCount).toBe(2);
    const second = await listConversations(store.indexes, temp.ws, ALICE, {
      limit: 2,
      cursor: first.nextCursor,
    });
    expect(second.conversations.map((c) => c.id)).toEqual([c1]);
  });

  it("an append racing a search moves no cursor: the next page repeats nothing", async () => {
    const store = openConversationStore(temp, time);
    const [c1, c2] = await threeConversations(store);
    appendAfterNextRead(store, () => store.append(temp.ws, ALICE, c2 as string, [said("banana")], NO_CALLER));
    const first = await searchConversations(store.indexes, store, temp.ws, ALICE, {
      query: "apple",
      limit: 2,
    });
    expect(first.results.map((r) => r.conversation.title)).toEqual(["c3", "c2"]);
    const second = await searchConversations(store.indexes, store, temp.ws, ALICE, {
      query: "apple",
      limit: 2,
      cursor: first.nextCursor,
    });
    expect(second.results.map((r) => r.conversation.id)).toEqual([c1]);
  });
});

describe("a search past its budget of postings", () => {
  it("answers the matches it found, marked truncated, in its result and in the tool's text", async () => {
    // 16 words held in every event of a full partition walked 5.8 million postings a search (adr/0120).
    const store = openConversationStore(temp, time, {
      index: { limits: { ...INDEX_LIMITS, searchPostings: 100 } },
    });
    const ids: string[] = [];
    for (const title of ["c1", "c2", "c3"]) {
      const events = Array.from({ length: 40 }, (_, i) => said(i % 2 === 0 ? "apple banana" : "apple"));
      ids.push((await store.create(temp.ws, ALICE, title, events, NO_CALLER)).id);
      time.jump(1000);
    }
    const page = await searchConversations(store.indexes, store, temp.ws, ALICE, { query: "apple banana" });
    expect(page.truncated).toBe(true);
    // Walked from the newest postings: c3's, and every event answered holds both words.
    expect(page.results[0]?.conversation.id).toBe(ids[2]);
    expect(page.results.length).toBeLessThan(3);
    for (const result of page.results) {
      for (const event of result.events) expect(event).toMatchObject({ content: [{ text: "apple banana" }] });
    }
    const caller = { principalId: ALICE, workspaceId: temp.ws, access: NO_CALLER };
    const tool = await createConversationsTools(store).call("search", { query: "apple banana" }, caller, {});
    expect(tool.structuredContent).toMatchObject({ truncated: true });
    expect(JSON.stringify(tool.content)).toContain("Stopped early");
    // Within the budget, the same search is whole, and says so.
    // A second store over the same logs, within its budget: the whole answer.
    const wholeStore = openConversationStore(temp, time);
    const whole = await searchConversations(wholeStore.indexes, wholeStore, temp.ws, ALICE, {
      query: "banana",
    });
    expect(whole.truncated).toBe(false);
    expect(whole.results.map((r) => r.matches)).toEqual([20, 20, 20]);
    const quiet = await createConversationsTools(store).call("search", { query: "banana" }, caller, {});
    expect(JSON.stringify(quiet.content)).not.toContain("Stopped early");
  });

  it("pages through a search past its budget: every matching event once, older parts after newer ones", async () => {
    const store = openConversationStore(temp, time, {
      index: { limits: { ...INDEX_LIMITS, searchPostings: 16 } },
    });
    // Four conversations, then appends to the older ones: their later events are indexed after the
    // newer conversations' earlier ones, so each word's postings interleave conversations.
    const ids: string[] = [];
    const event = (n: number) => said(n % 3 === 0 ? `apple banana n${n}` : `apple n${n}`);
    for (let c = 0; c < 4; c++) {
      ids.push(
        (await store.create(temp.ws, ALICE, `c${c}`, [event(1), event(2), event(3), event(4)], NO_CALLER)).id,
      );
      time.jump(1000);
    }
    for (let n = 5; n <= 16; n++) {
      await store.append(temp.ws, ALICE, ids[n % 2] as string, [event(n)], NO_CALLER);
      time.jump(1000);
    }
    // A second store over the same logs, within its budget: the whole answer.
    const wholeStore = openConversationStore(temp, time);
    const whole = await searchConversations(wholeStore.indexes, wholeStore, temp.ws, ALICE, {
      query: "banana apple",
      limit: 100,
    });
    // Small enough for every matching event to be shown: at most five a conversation.
    const expected = new Map(whole.results.map((r) => [r.conversation.id, r.events.map((e) => e.seq)]));
    expect(whole.truncated).toBe(false);

    const seen = new Map<string, number[]>();
    let cursor: string | undefined;
    let pages = 0;
    let truncatedPages = 0;
    do {
      const page: SearchPage = await searchConversations(store.indexes, store, temp.ws, ALICE, {
        query: "apple banana",
        limit: 2,
        cursor,
      });
      for (const result of page.results) {
        expect(result.events.map((e) => e.seq).length).toBe(result.matches);
        seen.set(result.conversation.id, [
          ...(seen.get(result.conversation.id) ?? []),
          ...result.events.map((e) => e.seq),
        ]);
      }
      if (page.truncated) truncatedPages += 1;
      cursor = page.nextCursor;
      pages += 1;
    } while (cursor !== undefined && pages < 100);
    // Parts of the search, some of more than one page, the last one whole.
    expect(truncatedPages).toBeGreaterThan(2);
    expect(pages).toBeGreaterThan(truncatedPages);
    expect(new Map([...seen].map(([id, seqs]) => [id, [...seqs].sort((a, b) => a - b)]))).toEqual(expected);
  });

  it("refuses a cursor that was tampered with, or given by a search of other words, saying what to do", async () => {
    const store = openConversationStore(temp, time, {
      index: { limits: { ...INDEX_LIMITS, searchPostings: 4 } },
    });
    for (let c = 0; c < 3; c++) {
      await store.create(temp.ws, ALICE, `c${c}`, [said("apple banana"), said("apple banana")], NO_CALLER);
      time.jump(1000);
    }
    const first = await searchConversations(store.indexes, store, temp.ws, ALICE, { query: "apple banana" });
    expect(first.truncated).toBe(true);
    const cursor = first.nextCursor as string;
    const decoded = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as { h: number };
    const tamper = (change: object) =>
      Buffer.from(JSON.stringify({ ...decoded, ...change })).toString("base64url");
    const after = ["2026-01-01T00:00:00.000Z", `cv_${"0".repeat(24)}`];
    const tampered = [
      "nope",
      tamper({ h: -1 }),
      tamper({ h: 1.5 }),
      tamper({ h: "1" }),
      tamper({ g: "../../etc/passwd" }),
      tamper({ a: [1, "../../etc/passwd"] }),
      Buffer.from(JSON.stringify({ q: "x" })).toString("base64url"),
      // A floor only on a later page of a part, and below the part's top.
      tamper({ l: 0 }),
      tamper({ a: after, l: decoded.h }),
      tamper({ a: after, l: -1 }),
    ];
    for (const bad of tampered) {
      await expect(
        searchConversations(store.indexes, store, temp.ws, ALICE, { query: "apple banana", cursor: bad }),
      ).rejects.toThrow("search again without a cursor");
    }
    await expect(
      searchConversations(store.indexes, store, temp.ws, ALICE, { query: "apple", cursor }),
    ).rejects.toThrow("belongs to a search of other words");
    // The words in another order are the same search.
    await searchConversations(store.indexes, store, temp.ws, ALICE, { query: "Banana apple", cursor });
    // A well-formed cursor of another numbering of the index's events.
    await expect(
      searchConversations(store.indexes, store, temp.ws, ALICE, {
        query: "apple banana",
        cursor: tamper({ g: "AAAAAAAAAAAA" }),
      }),
    ).rejects.toThrow("does not match the search index as it is now");
    const caller = { principalId: ALICE, workspaceId: temp.ws, access: NO_CALLER };
    const tool = await createConversationsTools(store).call(
      "search",
      { query: "apple banana", cursor: "nope" },
      caller,
      {},
    );
    expect(tool.isError).toBe(true);
    expect(JSON.stringify(tool.content)).toContain("search again without a cursor");
  });
});

/**
 * "apple" postings, oldest first: S, D, D, D, A, B; then S is updated (without the word), the most
 * recently updated, and D is deleted: its three postings stay in the lists until a compaction, and a
 * snapshot holds none. A search of five postings finds B and A, and goes on below A.
 */
async function sBelowDeadPostings(store: ConversationStore, text = (tag: string) => `apple ${tag}`) {
  const s = await store.create(temp.ws, ALICE, "S", [said("apple")], NO_CALLER);
  time.jump(1000);
  const d = await store.create(
    temp.ws,
    ALICE,
    "D",
    [said(text("x")), said(text("y")), said(text("z"))],
    NO_CALLER,
  );
  time.jump(1000);
  await store.create(temp.ws, ALICE, "A", [said("apple")], NO_CALLER);
  time.jump(1000);
  const b = await store.create(temp.ws, ALICE, "B", [said("apple")], NO_CALLER);
  time.jump(1000);
  await store.append(temp.ws, ALICE, s.id, [said("unrelated")], NO_CALLER);
  time.jump(1000);
  await store.delete(temp.ws, ALICE, d.id, NO_CALLER);
  return b.id;
}

/** Pages a search of "apple" one conversation a page to its end, running `between` after the first. */
async function pageOneByOne(store: ConversationStore, between: () => Promise<ConversationStore>) {
  const titles: string[] = [];
  const pages: SearchPage[] = [];
  let cursor: string | undefined;
  let current = store;
  do {
    const page: SearchPage = await searchConversations(current.indexes, current, temp.ws, ALICE, {
      query: "apple",
      limit: 1,
      cursor,
    });
    pages.push(page);
    titles.push(...page.results.map((r) => r.conversation.title));
    cursor = page.nextCursor;
    if (pages.length === 1) current = await between();
  } while (cursor !== undefined && pages.length < 20);
  return { titles, pages };
}

describe("a later page of a part reaches no further back than the part's first page", () => {
  const limits = { ...INDEX_LIMITS, searchPostings: 5 };

  it("after the partition is saved, dropped idle and loaded from its snapshot between two pages", async () => {
    // A restart is not here: the next process numbers anew, and refuses the cursor
    // (search-cursor.test.ts "is refused after a graceful restart").
    const idle = async (store: ConversationStore) => {
      await store.indexes.flush();
      await store.indexes.sweep(time.clock() + 11 * 60 * 1000);
      expect(store.indexes.loadedPartitions).toBe(0);
      return store;
    };
    // And nothing dropped: A, the very event the part's pages walk back to, is on the second page.
    const kept = async (store: ConversationStore) => store;
    for (const [n, between] of [idle, kept].entries()) {
      // A root of its own for each way; afterEach removes the last.
      await temp.remove();
      temp = await openTempRoot(`finder-floor-${n}`, ALICE);
      const store = openConversationStore(temp, time, { index: { limits } });
      await sBelowDeadPostings(store);
      const { titles, pages } = await pageOneByOne(store, () => between(store));
      expect(pages[0]?.results.map((r) => r.conversation.title)).toEqual(["B"]);
      expect(pages[0]?.truncated).toBe(true);
      // A second page without D's postings reached S (above B, so not answered there), and the
      // part below that page's reach then left S out.
      expect(titles.sort()).toEqual(["A", "B", "S"]);
      expect(pages.at(-1)?.truncated).toBe(false);
    }
  });

  it("after a compaction between two pages", async () => {
    const own = { ...limits };
    const store = openConversationStore(temp, time, { index: { limits: own } });
    // D's events hold 400 words each: its postings are enough to compact at the partition's budget.
    const many = (tag: string) => Array.from({ length: 400 }, (_, i) => `${tag}w${i}`).join(" ");
    const b = await sBelowDeadPostings(store, (tag) => `apple ${many(tag)}`);
    const { titles, pages } = await pageOneByOne(store, async () => {
      // At the partition's budget, the next event indexed compacts the removed postings away.
      const bytes = store.indexes.loadedBytes;
      own.partitionBytes = bytes;
      await store.append(temp.ws, ALICE, b, [said("zzz")], NO_CALLER);
      expect(store.indexes.loadedBytes).toBeLessThan(bytes);
      return store;
    });
    expect(pages[0]?.truncated).toBe(true);
    expect(titles.sort()).toEqual(["A", "B", "S"]);
    expect(pages.at(-1)?.truncated).toBe(false);
  });

  it("answers the next page of a search within its budget after the match its top names was deleted", async () => {
    const store = openConversationStore(temp, time);
    for (const title of ["c1", "c2", "c3"]) {
      await store.create(temp.ws, ALICE, title, [said("apple")], NO_CALLER);
      time.jump(1000);
    }
    const first = await searchConversations(store.indexes, store, temp.ws, ALICE, {
      query: "apple",
      limit: 1,
    });
    expect(first.results.map((r) => r.conversation.title)).toEqual(["c3"]);
    await store.delete(temp.ws, ALICE, first.results[0]?.conversation.id as string, NO_CALLER);
    // The top pinned at c3's event: refused as no longer indexed, where the page walks unpinned.
    const second = await searchConversations(store.indexes, store, temp.ws, ALICE, {
      query: "apple",
      limit: 1,
      cursor: first.nextCursor,
    });
    expect(second.results.map((r) => r.conversation.title)).toEqual(["c2"]);
  });

  it("answers every conversation of the first part though removed postings were added above it between pages", async () => {
    const store = openConversationStore(temp, time, { index: { limits } });
    await store.create(temp.ws, ALICE, "Old", [said("apple 1"), said("apple 2"), said("apple 3")], NO_CALLER);
    for (const title of ["A", "B", "C", "D", "E"]) {
      time.jump(1000);
      await store.create(temp.ws, ALICE, title, [said("apple")], NO_CALLER);
    }
    const { titles, pages } = await pageOneByOne(store, async () => {
      // Ten postings of a conversation made and deleted between the pages: more than the budget,
      // and kept in the lists until a compaction.
      time.jump(1000);
      await removedApplePostings(store, temp, ALICE);
      return store;
    });
    expect(pages[0]?.results.map((r) => r.conversation.title)).toEqual(["E"]);
    // The first part is pinned at the top its first page walked down from: X's postings, added
    // above it since, are not walked. Unpinned, the second page spent its budget on them and met
    // no live match: paging ended there (or, keeping the floor, jumped below it past D, C, B, A).
    expect(titles.sort()).toEqual(["A", "B", "C", "D", "E", "Old"]);
    expect(pages.at(-1)?.truncated).toBe(false);
  });

  it("goes on when the conversation of the event a part's pages walk back to is deleted", async () => {
    // A place in the lists is an event's number, not its key found by its conversation: deleting A,
    // the oldest event the first page reached, made the next page a 400 "no longer indexed".
    const store = openConversationStore(temp, time, { index: { limits } });
    await sBelowDeadPostings(store);
    const { titles, pages } = await pageOneByOne(store, async () => {
      const a = (await listConversations(store.indexes, temp.ws, ALICE, {})).conversations.find(
        (c) => c.title === "A",
      );
      await store.delete(temp.ws, ALICE, a?.id as string, NO_CALLER);
      return store;
    });
    expect(pages[0]?.results.map((r) => r.conversation.title)).toEqual(["B"]);
    expect(titles.sort()).toEqual(["B", "S"]);
    expect(pages.at(-1)?.truncated).toBe(false);
  });
});
