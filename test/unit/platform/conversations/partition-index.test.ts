import { describe, expect, it } from "vitest";
import type { ConversationEvent } from "../../../../src/platform/conversations/model.ts";
import { PartitionIndex } from "../../../../src/platform/conversations/partition-index.ts";

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

describe("the partition index", () => {
  it("finds events holding every word, whole words, case- and width-insensitively", () => {
    const index = new PartitionIndex();
    index.apply(
      id(1),
      [title(1, 0, "one"), said(2, 0, "The Quick brown fox"), said(3, 0, "quick only")],
      100,
    );
    index.apply(id(2), [title(1, 1, "two"), said(2, 1, "ｑｕｉｃｋ ＦＯＸ in full width")], 100);
    expect(index.search("quick fox", undefined, 10).hits).toEqual([
      { summary: expect.objectContaining({ id: id(2) }), seqs: [2] },
      { summary: expect.objectContaining({ id: id(1) }), seqs: [2] },
    ]);
    expect(index.search("qui", undefined, 10).hits).toEqual([]);
    expect(index.search("quick", undefined, 10).hits.find((h) => h.summary.id === id(1))?.seqs).toEqual([
      2, 3,
    ]);
    expect(index.search("", undefined, 10).hits).toEqual([]);
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

  it("forgets a removed conversation in list and search, also after compaction and a snapshot", () => {
    const index = new PartitionIndex();
    for (let n = 1; n <= 1200; n++) index.apply(id(n), [title(1, 0, "t"), said(2, 0, `shared word${n}`)], 50);
    for (let n = 1; n <= 1100; n++) index.remove(id(n));
    expect(index.size).toBe(100);
    expect(index.search("shared", undefined, 1000).hits).toHaveLength(100);
    expect(index.search("word5", undefined, 10).hits).toEqual([]);
    const copy = PartitionIndex.fromSnapshot(JSON.parse(JSON.stringify(index.toSnapshot())));
    expect(copy?.size).toBe(100);
    expect(copy?.search("word1200", undefined, 10).hits.map((h) => h.summary.id)).toEqual([id(1200)]);
    expect(copy?.page(undefined, 1000).summaries).toHaveLength(100);
  });

  it("refuses a snapshot it did not write", () => {
    const good = new PartitionIndex();
    good.apply(id(1), [title(1, 0, "t")], 10);
    const snapshot = good.toSnapshot();
    expect(
      PartitionIndex.fromSnapshot({
        ...snapshot,
        conversations: [{ ordinal: -1, summary: snapshot.conversations[0]?.summary, bytes: 1 }],
      } as never),
    ).toBeUndefined();
    expect(PartitionIndex.fromSnapshot({ ...snapshot, postings: { t: "AAA" } })).toBeUndefined();
    expect(PartitionIndex.fromSnapshot({ conversations: "x", postings: {} } as never)).toBeUndefined();
  });
});
