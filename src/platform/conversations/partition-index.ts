import { eventText, tokenize } from "./event-text.ts";
import { compareRecentFirst, firstAfter, type ListPosition } from "./list-order.ts";
import {
  type ConversationEvent,
  type ConversationSummary,
  foldEvent,
  isConversationId,
  summarize,
} from "./model.ts";

/**
 * A posting is one number: the conversation's ordinal in this index times SEQ_SPAN plus the
 * event's seq. A log holds at most maxConversationBytes, far fewer than 2^21 events, and an
 * ordinal below 2^32 keeps every key an exact integer (below 2^53).
 */
const SEQ_SPAN = 2 ** 21;
/** Removed conversations' postings are dropped once this many, and half the live ones, pile up. */
const COMPACT_AFTER_REMOVED = 1000;

/** What the index holds of one conversation besides its postings. */
interface Entry {
  ordinal: number;
  summary: ConversationSummary;
  /** The log's bytes this entry covers: the end of its last whole line when it was indexed. */
  bytes: number;
}

/** A conversation the query matched, and the seqs of its matching events, oldest first. */
export interface SearchHit {
  summary: ConversationSummary;
  seqs: number[];
}

/** The index as its snapshot file holds it (conversation-indexes.ts). */
export interface IndexSnapshot {
  conversations: Array<{ ordinal: number; summary: ConversationSummary; bytes: number }>;
  /** Each word's postings, as the little-endian float64 bytes of its keys, base64. */
  postings: Record<string, string>;
}

/**
 * One owner's conversations of one workspace, in memory (adr/0046): summaries sorted for list,
 * and an inverted index from each word to the events holding it for search, so neither reads a
 * log. Postings are flat arrays of numbers, not objects, so 10,000 conversations cost tens of
 * megabytes; a removed conversation's postings stay until enough pile up to compact. Moved only
 * by what the logs hold: `apply` an append's events, `remove` a deleted log.
 */
export class PartitionIndex {
  private readonly entries = new Map<string, Entry>();
  private readonly byOrdinal: Array<Entry | undefined> = [];
  private readonly postings = new Map<string, number[]>();
  /** Every summary, most recently updated first. */
  private readonly order: ConversationSummary[] = [];
  private removedSinceCompaction = 0;

  get size(): number {
    return this.entries.size;
  }

  /** How many bytes of the log the index covers; undefined when it holds nothing of it. */
  bytesOf(id: string): number | undefined {
    return this.entries.get(id)?.bytes;
  }

  ids(): string[] {
    return [...this.entries.keys()];
  }

  /** Adds events read from a log (from the start, or from `bytesOf`) and moves the coverage to `bytes`. */
  apply(id: string, events: readonly ConversationEvent[], bytes: number): void {
    let entry = this.entries.get(id);
    if (entry) {
      this.unorder(entry.summary);
      for (const event of events) foldEvent(entry.summary, event);
    } else {
      // A log with no whole event yet (only a torn or foreign line) has nothing to list.
      if (events.length === 0) return;
      entry = { ordinal: this.byOrdinal.length, summary: summarize(id, events), bytes };
      this.entries.set(id, entry);
      this.byOrdinal.push(entry);
    }
    for (const event of events) {
      const key = entry.ordinal * SEQ_SPAN + event.seq;
      for (const word of tokenize(eventText(event))) this.list(word).push(key);
    }
    entry.bytes = bytes;
    this.order.splice(firstAfter(this.order, entry.summary), 0, entry.summary);
  }

  remove(id: string): void {
    const entry = this.entries.get(id);
    if (!entry) return;
    this.unorder(entry.summary);
    this.entries.delete(id);
    this.byOrdinal[entry.ordinal] = undefined;
    this.removedSinceCompaction += 1;
    if (
      this.removedSinceCompaction >= COMPACT_AFTER_REMOVED &&
      this.removedSinceCompaction * 2 >= this.entries.size
    ) {
      this.compact();
    }
  }

  /** Up to `limit` summaries after `after` (from the first when undefined), and whether more follow. */
  page(after: ListPosition | undefined, limit: number): { summaries: ConversationSummary[]; more: boolean } {
    const start = after === undefined ? 0 : firstAfter(this.order, after);
    return { summaries: this.order.slice(start, start + limit), more: start + limit < this.order.length };
  }

  /**
   * The conversations with an event holding every word of `query`, most recently updated first,
   * after `after`, up to `limit`; each with the seqs of those events.
   */
  search(
    query: string,
    after: ListPosition | undefined,
    limit: number,
  ): { hits: SearchHit[]; more: boolean } {
    const lists = tokenize(query).map((word) => this.postings.get(word) ?? []);
    lists.sort((a, b) => a.length - b.length);
    const [smallest, ...others] = lists;
    if (!smallest) return { hits: [], more: false };
    const found = new Map<Entry, number[]>();
    for (const key of others.length === 0 ? smallest : keysInAll(smallest, others)) {
      const entry = this.byOrdinal[Math.floor(key / SEQ_SPAN)];
      if (!entry || (after !== undefined && compareRecentFirst(entry.summary, after) <= 0)) continue;
      const seqs = found.get(entry) ?? [];
      seqs.push(key % SEQ_SPAN);
      found.set(entry, seqs);
    }
    const hits = [...found].map(([entry, seqs]) => ({
      summary: entry.summary,
      seqs: seqs.sort((a, b) => a - b),
    }));
    hits.sort((a, b) => compareRecentFirst(a.summary, b.summary));
    return { hits: hits.slice(0, limit), more: hits.length > limit };
  }

  toSnapshot(): IndexSnapshot {
    this.compact();
    const postings: Record<string, string> = {};
    for (const [word, keys] of this.postings)
      postings[word] = Buffer.from(Float64Array.from(keys).buffer).toString("base64");
    const conversations = [...this.entries.values()].map(({ ordinal, summary, bytes }) => ({
      ordinal,
      summary,
      bytes,
    }));
    return { conversations, postings };
  }

  /** The index a snapshot holds; undefined when it is not one this code wrote. */
  static fromSnapshot(snapshot: IndexSnapshot): PartitionIndex | undefined {
    const index = new PartitionIndex();
    if (
      !Array.isArray(snapshot.conversations) ||
      typeof snapshot.postings !== "object" ||
      snapshot.postings === null
    ) {
      return undefined;
    }
    for (const { ordinal, summary, bytes } of snapshot.conversations) {
      if (!Number.isSafeInteger(ordinal) || ordinal < 0 || !Number.isSafeInteger(bytes)) return undefined;
      if (typeof summary?.id !== "string" || !isConversationId(summary.id) || index.entries.has(summary.id))
        return undefined;
      const entry = { ordinal, summary, bytes };
      index.entries.set(summary.id, entry);
      index.byOrdinal[ordinal] = entry;
      index.order.push(summary);
    }
    index.order.sort(compareRecentFirst);
    for (const [word, encoded] of Object.entries(snapshot.postings)) {
      const bytes = Buffer.from(String(encoded), "base64");
      if (bytes.length % 8 !== 0) return undefined;
      const keys = new Array<number>(bytes.length / 8);
      for (let i = 0; i < keys.length; i++) keys[i] = bytes.readDoubleLE(i * 8);
      index.postings.set(word, keys);
    }
    return index;
  }

  /** Drops the postings of removed conversations. */
  private compact(): void {
    if (this.removedSinceCompaction === 0) return;
    for (const [word, keys] of this.postings) {
      const live = keys.filter((key) => this.byOrdinal[Math.floor(key / SEQ_SPAN)] !== undefined);
      if (live.length === 0) this.postings.delete(word);
      else this.postings.set(word, live);
    }
    this.removedSinceCompaction = 0;
  }

  private list(word: string): number[] {
    let keys = this.postings.get(word);
    if (!keys) {
      keys = [];
      this.postings.set(word, keys);
    }
    return keys;
  }

  private unorder(summary: ConversationSummary): void {
    // The entry just before the first one after it: the summary itself.
    const at = firstAfter(this.order, summary) - 1;
    if (this.order[at] === summary) this.order.splice(at, 1);
  }
}

/** The keys of `first` that every one of `others` holds too. */
function keysInAll(first: readonly number[], others: readonly number[][]): number[] {
  const counts = new Map<number, number>(first.map((key) => [key, 1]));
  for (const list of others) {
    for (const key of list) {
      const count = counts.get(key);
      if (count !== undefined) counts.set(key, count + 1);
    }
  }
  return [...counts].flatMap(([key, count]) => (count === others.length + 1 ? [key] : []));
}
