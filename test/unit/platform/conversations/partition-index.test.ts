import { describe, expect, it } from "vitest";
import { eventText, tokenize } from "../../../../src/platform/conversations/event-text.ts";
import { INDEX_LIMITS, type IndexLimits } from "../../../../src/platform/conversations/index-limits.ts";
import { compareRecentFirst } from "../../../../src/platform/conversations/list-order.ts";
import type { ConversationEvent, ConversationSummary } from "../../../../src/platform/conversations/model.ts";
import { PartitionIndex } from "../../../../src/platform/conversations/partition-index.ts";
import { SEARCH_KEYS_PER_TURN, SearchTurns } from "../../../../src/platform/conversations/postings.ts";

const id = (n: number) => `cv_${n.toString(16).padStart(24, "0")}`;
const at = (minute: number) => new Date(Date.UTC(2026, 0, 1, 0, minute)).toISOString();
const title = (seq: number, minute: number, text: string): ConversationEvent => ({
  seq,
  at: at(minute),
  type: "title",
  title: text,
});
const said = (seq: number, minute: number, text: string): ConversationEvent => ({
  seq,
  at: at(minute),
  type: "message",
  role: "user",
  content: [{ type: "text", text }],
});

/** The index its snapshot records give back, each record through JSON as the file holds it. */
async function roundTrip(index: PartitionIndex, limits?: IndexLimits): Promise<PartitionIndex | undefined> {
  const lines = [...index.snapshotRecords()].map((record) => JSON.stringify(record));
  return fromLines(lines, limits);
}

async function fromLines(lines: string[], limits?: IndexLimits): Promise<PartitionIndex | undefined> {
  return PartitionIndex.fromSnapshot(
    (async function* () {
      for (const line of lines) yield JSON.parse(line);
    })(),
    limits,
  );
}

/** `count` words no other call gives, as a hostile client would send. */
let nextWord = 1e8;
function distinctText(count: number): string {
  return Array.from({ length: count }, () => (nextWord++).toString(36)).join(" ");
}

function firstWordOf(event: ConversationEvent | undefined): string {
  const block = event?.type === "message" ? event.content[0] : undefined;
  return block?.type === "text" ? (block.text.split(" ")[0] ?? "") : "";
}

describe("the partition index", () => {
  it("finds events holding every word, whole words, case- and width-insensitively", async () => {
    const index = new PartitionIndex();
    index.apply(
      id(1),
      [title(1, 0, "one"), said(2, 0, "The Quick brown fox"), said(3, 0, "quick only")],
      100,
    );
    index.apply(id(2), [title(1, 1, "two"), said(2, 1, "ｑｕｉｃｋ ＦＯＸ in full width")], 100);
    expect((await index.search("quick fox", undefined, 10)).hits).toEqual([
      { summary: expect.objectContaining({ id: id(2) }), seqs: [2] },
      { summary: expect.objectContaining({ id: id(1) }), seqs: [2] },
    ]);
    expect((await index.search("qui", undefined, 10)).hits).toEqual([]);
    expect(
      (await index.search("quick", undefined, 10)).hits.find((h) => h.summary.id === id(1))?.seqs,
    ).toEqual([2, 3]);
    expect((await index.search("", undefined, 10)).hits).toEqual([]);
  });

  it("keeps summaries most recently updated first as appends arrive, and pages after a position", () => {
    const index = new PartitionIndex();
    for (let n = 1; n <= 3; n++) index.apply(id(n), [title(1, n, `c${n}`)], 10);
    index.apply(id(1), [said(2, 10, "later")], 20);
    expect(index.page(undefined, 10).summaries.map((s) => s.id)).toEqual([id(1), id(3), id(2)]);
    const first = index.page(undefined, 1);
    expect(first.more).toBe(true);
    expect(index.page(first.summaries[0], 5).summaries.map((s) => s.id)).toEqual([id(3), id(2)]);
    expect(index.bytesOf(id(1))).toBe(20);
  });

  it("forgets a removed conversation in list and search, also after compaction and a snapshot", async () => {
    const index = new PartitionIndex();
    for (let n = 1; n <= 1200; n++) index.apply(id(n), [title(1, 0, "t"), said(2, 0, `shared word${n}`)], 50);
    for (let n = 1; n <= 1100; n++) index.remove(id(n));
    expect(index.size).toBe(100);
    expect((await index.search("shared", undefined, 1000)).hits).toHaveLength(100);
    expect((await index.search("word5", undefined, 10)).hits).toEqual([]);
    const copy = await roundTrip(index);
    expect(copy?.size).toBe(100);
    expect((await copy?.search("word1200", undefined, 10))?.hits.map((h) => h.summary.id)).toEqual([
      id(1200),
    ]);
    expect(copy?.page(undefined, 1000).summaries).toHaveLength(100);
  });

  it("refuses a snapshot it did not write", async () => {
    const good = new PartitionIndex();
    good.apply(id(1), [title(1, 0, "t")], 10);
    const lines = [...good.snapshotRecords()].map((record) => JSON.stringify(record));
    expect(await fromLines(lines)).toBeDefined();
    expect(await fromLines([...lines, lines.at(-1) ?? ""])).toBeUndefined();
    const summary = good.page(undefined, 1).summaries[0];
    const bad = { ordinal: -1, summary, bytes: 1, postings: 0, partial: false };
    expect(await fromLines([JSON.stringify({ conversations: [bad] })])).toBeUndefined();
    expect(await fromLines([JSON.stringify({ postings: { t: "AAA" } })])).toBeUndefined();
    expect(await fromLines(['{"conversations":"x"}'])).toBeUndefined();
  });

  it("refuses a snapshot whose postings are not numbered events, in order", async () => {
    // A search finds a cursor's place in each list by a binary search (adr/0144).
    const index = new PartitionIndex();
    index.apply(id(1), [title(1, 0, "t"), said(2, 0, "apple"), said(3, 0, "apple")], 10);
    const lines = [...index.snapshotRecords()].map((record) => JSON.stringify(record));
    const copy = await fromLines(lines);
    expect(copy?.generation).toBe(index.generation);
    const keys = (...numbers: number[]) => Buffer.from(Float64Array.from(numbers).buffer).toString("base64");
    const withPostings = (postings: Record<string, string>) =>
      lines.map((line) => (line.startsWith('{"postings"') ? JSON.stringify({ postings }) : line));
    expect(await fromLines(withPostings({ t: keys(0), apple: keys(1, 2) }))).toBeDefined();
    expect(await fromLines(withPostings({ t: keys(0), apple: keys(2, 1) }))).toBeUndefined();
    expect(await fromLines(withPostings({ t: keys(0), apple: keys(1, 3) }))).toBeUndefined();
    expect(await fromLines(lines.filter((line) => !line.startsWith('{"generation"')))).toBeDefined();
    expect(await fromLines([JSON.stringify({ generation: "../x" }), ...lines.slice(1)])).toBeUndefined();
  });

  it("numbers its events again, under a new generation, only once removed ones are half of those it numbered", async () => {
    // A removed conversation's numbers stay, so a cursor's numbers keep meaning the same events;
    // kept for good, creating and deleting would grow them without bound.
    const index = new PartitionIndex();
    const big = (n: number, events: number, words: number) =>
      Array.from({ length: events }, (_, i) => said(i + 2, n, `gone ${distinctText(words)}`));
    index.apply(id(1), [title(1, 1, ""), ...big(1, 10, 2_000)], 1);
    index.apply(
      id(2),
      [title(1, 2, ""), ...Array.from({ length: 30 }, (_, i) => said(i + 2, 2, `kept ${i}`))],
      1,
    );
    const generation = index.generation;
    // Compacted (over 1 MiB, and half the live bytes), but 10 of 40 numbers are removed ones.
    index.remove(id(1));
    expect(index.removedBytes).toBe(0);
    expect(index.generation).toBe(generation);
    index.apply(id(3), [title(1, 3, ""), ...big(3, 60, 300)], 1);
    index.remove(id(3));
    expect(index.removedBytes).toBe(0);
    expect(index.generation).not.toBe(generation);
    const kept = await index.search("kept", undefined, 10);
    expect(kept.hits.map((hit) => [hit.summary.id, hit.seqs])).toEqual([
      [id(2), Array.from({ length: 30 }, (_, i) => i + 2)],
    ]);
    expect((await index.search("gone", undefined, 10)).hits).toEqual([]);
    const copy = await roundTrip(index);
    expect((await copy?.search("kept 7", undefined, 10))?.hits.map((hit) => hit.seqs)).toEqual([[9]]);
  });

  it("never gives an ordinal twice, though a removed conversation's numbers outlive a reload", async () => {
    // After a reload, ordinals went on from the highest live one: the next new conversation took
    // a removed one's, was charged for its kept numbers, and a renumbering kept them as its own.
    const index = new PartitionIndex();
    const kept = Array.from({ length: 30 }, (_, i) => said(i + 2, 1, `kept ${i}`));
    index.apply(id(1), [title(1, 1, ""), ...kept], 1);
    index.apply(
      id(2),
      [title(1, 2, ""), ...Array.from({ length: 40 }, (_, i) => said(i + 2, 2, `gone ${i}`))],
      1,
    );
    index.remove(id(2));
    const copy = (await roundTrip(index)) as PartitionIndex;
    copy.apply(id(3), [title(1, 3, ""), said(2, 3, "fresh")], 1);
    // Over 1 MiB removed, and removed numbers over half: compacted and numbered again.
    const big = Array.from({ length: 60 }, (_, i) => said(i + 2, 4, `big ${distinctText(300)}`));
    copy.apply(id(4), [title(1, 4, ""), ...big], 1);
    const generation = copy.generation;
    copy.remove(id(4));
    expect(copy.generation).not.toBe(generation);
    // Every live event with a word (30 kept, 1 fresh), and no removed one, keeps a number.
    let numbers = 0;
    for (const record of copy.snapshotRecords()) {
      if ("events" in record) numbers += Buffer.from(record.events, "base64").length / 8;
    }
    expect(numbers).toBe(31);
    expect((await copy.search("fresh", undefined, 10)).hits.map((hit) => [hit.summary.id, hit.seqs])).toEqual(
      [[id(3), [2]]],
    );
    expect((await copy.search("gone", undefined, 10)).hits).toEqual([]);
  });

  it("refuses a snapshot cut at any line boundary, or missing any line but its generation's", async () => {
    // A snapshot is renamed into place whole; read, a cut one answered no search for its lost
    // words, under a generation old cursors still matched (index-snapshot.test.ts).
    const index = new PartitionIndex();
    index.apply(
      id(1),
      [title(1, 1, "one"), ...Array.from({ length: 20 }, (_, i) => said(i + 2, 1, distinctText(1_500)))],
      1,
    );
    index.apply(id(2), [title(1, 2, "two"), said(2, 2, "apple")], 1);
    index.apply(id(3), [title(1, 3, "three"), said(2, 3, "apple")], 1);
    index.remove(id(3));
    const lines = [...index.snapshotRecords()].map((record) => JSON.stringify(record));
    expect(lines.filter((line) => line.startsWith('{"postings"')).length).toBeGreaterThan(1);
    expect(await fromLines(lines)).toBeDefined();
    const refused = (cut: string[]) =>
      fromLines(cut).then(
        (copy) => copy === undefined,
        () => true,
      );
    for (let at = 1; at < lines.length; at++) {
      expect(await refused(lines.slice(0, at))).toBe(true);
      expect(await refused(lines.filter((_, line) => line !== at))).toBe(true);
    }
    await expect(fromLines(lines.slice(0, -1))).rejects.toThrow("ends before its end record");
  });

  it("indexes an event's first distinct words and a conversation's first postings, and says what it left out", async () => {
    const limits = { ...INDEX_LIMITS, termsPerEvent: 3, postingsPerConversation: 5 };
    const index = new PartitionIndex(limits);
    index.apply(id(1), [title(1, 0, ""), said(2, 0, "alpha beta alpha gamma delta")], 10);
    index.apply(id(2), [title(1, 0, ""), said(2, 0, "alpha beta")], 10);
    expect((await index.search("gamma", undefined, 10)).hits.map((h) => h.summary.id)).toEqual([id(1)]);
    expect((await index.search("delta", undefined, 10)).hits).toEqual([]);
    expect(index.partialCount).toBe(1);
    // Two postings left for the first: the next event's first two words, then none.
    index.apply(id(1), [said(3, 1, "epsilon zeta eta"), said(4, 2, "theta")], 20);
    expect((await index.search("zeta", undefined, 10)).hits.map((h) => h.seqs)).toEqual([[3]]);
    expect((await index.search("eta", undefined, 10)).hits).toEqual([]);
    expect((await index.search("theta", undefined, 10)).hits).toEqual([]);
    // Counted on after a snapshot: the same words found, the same left out.
    const copy = await roundTrip(index, limits);
    copy?.apply(id(1), [said(5, 3, "iota")], 30);
    expect((await copy?.search("iota", undefined, 10))?.hits).toEqual([]);
    expect((await copy?.search("zeta alpha", undefined, 10))?.hits).toEqual([]);
    expect((await copy?.search("alpha", undefined, 10))?.hits.map((h) => [h.summary.id, h.seqs])).toEqual([
      [id(1), [2]],
      [id(2), [2]],
    ]);
    expect(copy?.partialCount).toBe(1);
  });

  it("keeps a log of nothing but distinct words within its budget, in memory and in its snapshot", async () => {
    // The reviewer's log in miniature: 20 events of 20,000 words no other event holds.
    const index = new PartitionIndex();
    const events = Array.from({ length: 20 }, (_, i) => said(i + 2, i, distinctText(20_000)));
    index.apply(id(1), [title(1, 0, "t"), ...events], 1);
    const postings = 20 * INDEX_LIMITS.termsPerEvent;
    expect(index.estimatedBytes).toBeLessThan(postings * 100);
    const snapshotChars = [...index.snapshotRecords()].reduce((n, r) => n + JSON.stringify(r).length, 0);
    expect(snapshotChars).toBeLessThan(postings * 30);
    expect(index.partialCount).toBe(1);
    // What it did index is found: each event's first word.
    expect((await index.search(firstWordOf(events[7]), undefined, 10)).hits[0]?.seqs).toEqual([9]);
  });

  it("stops indexing a conversation at its postings limit", async () => {
    const index = new PartitionIndex();
    const events = Array.from({ length: 150 }, (_, i) => said(i + 2, 0, distinctText(2_000)));
    index.apply(id(1), [title(1, 0, ""), ...events], 1);
    const limit = INDEX_LIMITS.postingsPerConversation;
    expect(index.estimatedBytes).toBeLessThan(limit * 100);
    // Event n (seq n + 1) is the last whose words fit: n × 2,000 = the limit.
    const last = limit / INDEX_LIMITS.termsPerEvent;
    expect((await index.search(firstWordOf(events[last - 1]), undefined, 10)).hits[0]?.seqs).toEqual([
      last + 1,
    ]);
    expect((await index.search(firstWordOf(events[last]), undefined, 10)).hits).toEqual([]);
  });

  it("indexes nothing more in a partition past its bytes, and still lists every conversation", async () => {
    const limits = { ...INDEX_LIMITS, partitionBytes: 4 * 1024 * 1024 };
    const index = new PartitionIndex(limits);
    for (let n = 1; n <= 40; n++) {
      const events = Array.from({ length: 20 }, (_, i) => said(i + 2, n, distinctText(2_000)));
      index.apply(id(n), [title(1, n, "t"), ...events], 1);
    }
    // Past it by one event's words at most: the event that crossed it.
    expect(index.estimatedBytes).toBeLessThan(limits.partitionBytes + INDEX_LIMITS.termsPerEvent * 100);
    expect(index.page(undefined, 100).summaries).toHaveLength(40);
    // The first conversations are whole; the ones the budget reached are partial.
    expect((await index.search("t", undefined, 100)).hits.map((h) => h.summary.id)).toContain(id(1));
    expect(index.partialCount).toBeGreaterThan(30);
    expect(index.partialCount).toBeLessThan(40);
  });

  it("gives back a removed conversation's bytes, so creating and deleting never grows it", () => {
    const index = new PartitionIndex();
    for (let n = 1; n <= 30; n++) {
      const events = Array.from({ length: 30 }, (_, i) => said(i + 2, n, distinctText(2_000)));
      index.apply(id(n), [title(1, n, "t"), ...events], 1);
      index.remove(id(n));
    }
    expect(index.estimatedBytes).toBeLessThan(2 * 30 * 2_000 * 100);
  });

  it("at its budget, compacts removed conversations once they are 1 MiB, not at the next event after every removal", async () => {
    // Each removal used to make the next event walk every posting: 220–315 ms at 64 MiB (adr/0084).
    const limits = { ...INDEX_LIMITS, partitionBytes: 8 * 1024 * 1024 };
    const index = new PartitionIndex(limits);
    for (let n = 1; n <= 8; n++) {
      const events = Array.from({ length: 8 }, (_, i) => said(i + 2, n, distinctText(2_000)));
      index.apply(id(n), [title(1, n, ""), ...events], 1);
    }
    expect(index.estimatedBytes).toBeGreaterThanOrEqual(limits.partitionBytes);
    const removed: number[] = [];
    for (let k = 1; k <= 200; k++) {
      index.apply(id(100 + k), [title(1, 10, "")], 1);
      index.remove(id(100 + k));
      index.apply(id(1), [said(9 + k, 10, `hello ${k}`)], 1);
      removed.push(index.removedBytes);
    }
    expect(removed[0]).toBeGreaterThan(0);
    expect(removed).toEqual(removed.map((_, k) => (k + 1) * (removed[0] as number)));
    // Removing a large conversation takes them past 1 MiB, not past half the live bytes, so
    // `remove` leaves them; the next event compacts them away and its words are indexed.
    index.remove(id(2));
    expect(index.removedBytes).toBeGreaterThan(1024 * 1024);
    index.apply(id(1), [said(300, 11, "okapi")], 1);
    expect(index.removedBytes).toBe(0);
    expect(index.estimatedBytes).toBeLessThan(limits.partitionBytes);
    expect((await index.search("okapi", undefined, 10)).hits.map((h) => h.seqs)).toEqual([[300]]);
  });

  it("snapshots without a removed conversation's postings, and leaves compacting them to its rules", async () => {
    const index = new PartitionIndex();
    index.apply(id(1), [title(1, 0, ""), said(2, 0, `gone ${distinctText(100)}`)], 1);
    index.apply(id(2), [title(1, 1, ""), said(2, 1, `kept ${distinctText(100)}`)], 1);
    index.remove(id(1));
    const removed = index.removedBytes;
    expect(removed).toBeGreaterThan(0);
    const copy = await roundTrip(index);
    expect(index.removedBytes).toBe(removed);
    expect((await copy?.search("gone", undefined, 10))?.hits).toEqual([]);
    expect((await copy?.search("kept", undefined, 10))?.hits.map((h) => h.summary.id)).toEqual([id(2)]);
    expect(copy?.estimatedBytes).toBeLessThan(index.estimatedBytes - removed / 2);
  });

  it("counts a conversation loaded from its snapshot as many bytes when removed as when it was indexed", async () => {
    // What a removal counts decides when the budget makes room for new words (adr/0084).
    const index = new PartitionIndex();
    index.apply(id(1), [title(1, 0, "shared"), said(2, 0, distinctText(2_000))], 1);
    index.apply(
      id(2),
      [title(1, 1, "shared"), said(2, 1, distinctText(2_000)), said(3, 1, distinctText(2_000))],
      1,
    );
    const copy = await roundTrip(index);
    index.remove(id(1));
    copy?.remove(id(1));
    expect(index.removedBytes).toBeGreaterThan(2_000 * 64);
    expect(copy?.removedBytes).toBe(index.removedBytes);
    index.remove(id(2));
    copy?.remove(id(2));
    expect(copy?.removedBytes).toBe(index.removedBytes);
  });

  it("gives the event loop back while it walks postings, and answers as a walk in one turn would", async () => {
    // One search walked every posting of every query word in one turn: 0.1–0.9 s over a full
    // partition (adr/0115). Appends go round the conversations, so each word's postings are not
    // in key order, as in a real partition.
    const index = new PartitionIndex();
    const logs = new Map<string, ConversationEvent[]>();
    const vocabulary = ["amber", "birch", "cedar", "delta", "ember", "fjord"];
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let round = 0; round < 100; round++) {
      for (let n = 1; n <= 40; n++) {
        const events = logs.get(id(n)) ?? [];
        const batch = Array.from({ length: 25 }, (_, i) =>
          said(events.length + i + 1, round * 40 + n, vocabulary.filter(() => random() < 0.6).join(" ")),
        );
        events.push(...batch);
        logs.set(id(n), events);
        index.apply(id(n), batch, 1);
      }
    }
    // What the search must answer, from the events themselves.
    const expected = (query: string, after: ConversationSummary | undefined, limit: number) => {
      const words = tokenize(query);
      const hits = [...logs].flatMap(([conversation, events]) => {
        const summary = index.page(undefined, 100).summaries.find((s) => s.id === conversation);
        if (!summary || (after !== undefined && compareRecentFirst(summary, after) <= 0)) return [];
        const seqs = events
          .filter((e) => words.every((w) => tokenize(eventText(e)).includes(w)))
          .map((e) => e.seq);
        return seqs.length === 0 ? [] : [{ id: conversation, seqs }];
      });
      hits.sort((a, b) => compareRecentFirst(summaryOf(a.id), summaryOf(b.id)));
      return { hits: hits.slice(0, limit), more: hits.length > limit };
    };
    const summaryOf = (conversation: string) =>
      index.page(undefined, 100).summaries.find((s) => s.id === conversation) as ConversationSummary;
    const postingsOf = (word: string) =>
      [...logs.values()].flat().filter((e) => tokenize(eventText(e)).includes(word)).length;

    const query = "amber cedar ember";
    const walked = tokenize(query).reduce((sum, word) => sum + postingsOf(word), 0);
    expect(walked).toBeGreaterThan(4 * SEARCH_KEYS_PER_TURN);
    let ticks = 0;
    let searching = true;
    const tick = () => {
      if (!searching) return;
      ticks += 1;
      setImmediate(tick);
    };
    setImmediate(tick);
    const turns = new SearchTurns(INDEX_LIMITS.searchPostings);
    const found = await index.search(query, undefined, 10, turns);
    searching = false;
    // Each turn given back ran the other work waiting: here, one tick.
    expect(turns.turns).toBeGreaterThanOrEqual(Math.floor(walked / SEARCH_KEYS_PER_TURN) - 1);
    expect(ticks).toBeGreaterThanOrEqual(turns.turns - 1);
    const answer = (page: typeof found) => ({
      hits: page.hits.map((h) => ({ id: h.summary.id, seqs: h.seqs })),
      more: page.more,
    });
    expect(answer(found)).toEqual(expected(query, undefined, 10));
    expect(found.truncated).toBe(false);
    const after = summaryOf(id(17));
    for (const [words, limit] of [
      ["fjord", 100],
      ["birch delta", 5],
      ["amber birch cedar delta ember fjord", 100],
      ["birch nowhere", 10],
    ] as const) {
      expect(answer(await index.search(words, undefined, limit))).toEqual(expected(words, undefined, limit));
      expect(answer(await index.search(words, after, limit))).toEqual(expected(words, after, limit));
    }
  });

  it("walks at most its budget of postings, and answers the latest matches it found, marked truncated", async () => {
    // A full partition searched for 16 words held everywhere walked 5.8 million postings, 210–340
    // ms of CPU, however often it gave the loop back (adr/0120).
    const budget = SEARCH_KEYS_PER_TURN;
    const index = new PartitionIndex({ ...INDEX_LIMITS, searchPostings: budget });
    // "amber" in every event, "birch" in every second, "cedar" in every third, "delta" in every
    // thousandth: 160,000 postings of "amber", 293,336 of the query's three words.
    const text = (seq: number) =>
      [
        "amber",
        seq % 2 === 0 ? "birch" : "",
        seq % 3 === 0 ? "cedar" : "",
        seq % 1000 === 0 ? "delta" : "",
      ].join(" ");
    for (let n = 1; n <= 20; n++) {
      index.apply(
        id(n),
        Array.from({ length: 8000 }, (_, i) => said(i + 1, n, text(i + 1))),
        1,
      );
    }
    const query = "amber birch cedar";
    const turns = new SearchTurns(budget);
    const found = await index.search(query, undefined, 100, turns);
    expect(found.truncated).toBe(true);
    // The budget walked, then the keys found grouped and sorted: a turn given back per 32 Ki.
    expect(turns.turns).toBeLessThanOrEqual(2);
    // Lists are walked from their ends: the events indexed last are the ones found.
    const ids = found.hits.map((hit) => hit.summary.id);
    expect(ids).toContain(id(20));
    expect(ids).not.toContain(id(1));
    expect(found.hits.find((hit) => hit.summary.id === id(20))?.seqs).toHaveLength(1333);
    for (const hit of found.hits) for (const seq of hit.seqs) expect(seq % 6).toBe(0);
    // Within its budget a search is whole.
    const delta = await index.search("delta", undefined, 100, new SearchTurns(budget));
    expect(delta.truncated).toBe(false);
    expect(delta.hits.map((hit) => hit.seqs)).toEqual(
      Array(20).fill([1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000]),
    );
    const whole = await index.search(query, undefined, 100, new SearchTurns(INDEX_LIMITS.searchPostings));
    expect(whole.truncated).toBe(false);
    expect(whole.hits.map((hit) => hit.seqs.length)).toEqual(Array(20).fill(1333));
  });

  it("answers copies of its summaries, which a later append does not move", async () => {
    // A caller reads them after the partition's lock is released: a cursor, an MCP answer.
    const index = new PartitionIndex();
    index.apply(id(1), [title(1, 0, "one"), said(2, 0, "apple")], 10);
    const listed = index.page(undefined, 10).summaries[0];
    const found = (await index.search("apple", undefined, 10)).hits[0]?.summary;
    index.apply(id(1), [said(3, 5, "banana")], 20);
    for (const summary of [listed, found]) {
      expect(summary).toMatchObject({ id: id(1), eventCount: 2, updatedAt: at(0) });
    }
    expect(index.page(undefined, 10).summaries[0]).toMatchObject({ eventCount: 3, updatedAt: at(5) });
  });

  it("does not index an event numbered past 2^21 − 1, whose key would be another conversation's", async () => {
    // An operator's hand edit can number one so (adr/0117); appends cannot.
    const index = new PartitionIndex();
    index.apply(id(1), [title(1, 0, "one"), said(2 ** 21 + 2, 0, "ghost")], 10);
    index.apply(id(2), [title(1, 1, "two"), said(2, 1, "real")], 10);
    expect((await index.search("ghost", undefined, 10)).hits).toEqual([]);
    expect(index.partialCount).toBe(1);
    expect((await index.search("real", undefined, 10)).hits.map((h) => [h.summary.id, h.seqs])).toEqual([
      [id(2), [2]],
    ]);
  });
});
