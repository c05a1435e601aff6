import { distinctWords, eventText, tokenize } from "./event-text.ts";
import { INDEX_LIMITS, type IndexLimits } from "./index-limits.ts";
import { addedBytes, ENTRY_BYTES, wordBytes } from "./index-memory.ts";
import type { SnapshotConversation, SnapshotRecord } from "./index-snapshot.ts";
import { MAX_EVENT_SEQ } from "./limits.ts";
import { compareRecentFirst, firstAfter, type ListPosition } from "./list-order.ts";
import {
  type ConversationEvent,
  type ConversationSummary,
  foldEvent,
  isConversationId,
  summarize,
} from "./model.ts";
import { keysInAll, keysOf, listsWithin, type PostingList, SearchTurns, walkInTurns } from "./postings.ts";
import type { EventPlace, SearchAnswer, SearchHit, SearchPart } from "./search-answer.ts";

/**
 * A posting is one number: the conversation's ordinal in this index times SEQ_SPAN plus the
 * event's seq. Appends number no event past MAX_EVENT_SEQ (limits.ts; maxConversationBytes is at
 * most 128 MiB), an event an operator numbered past it is not indexed, and an ordinal below 2^32
 * keeps every key an exact integer (below 2^53).
 */
const SEQ_SPAN = MAX_EVENT_SEQ + 1;
/**
 * Removed conversations' postings are dropped (compact(), a walk of every posting in one turn of
 * the event loop: about 250 ms at a full partition) once this many bytes of them and half the live
 * bytes pile up; at the budget, where they keep words out, once this many or half (adr/0084).
 */
const COMPACT_AFTER_DEAD_BYTES = 1024 * 1024;

/** What the index holds of one conversation besides its postings. */
interface Entry {
  ordinal: number;
  summary: ConversationSummary;
  /** The log's bytes this entry covers: the end of its last whole line when it was indexed. */
  bytes: number;
  /** How many (word, event) pairs of it are indexed, against postingsPerConversation. */
  postings: number;
  /** Some of its words are not indexed: past one of the limits. */
  partial: boolean;
  /** The estimated bytes it added, counted as dead when it is removed. */
  cost: number;
}

const CONVERSATIONS_PER_RECORD = 1000;
/** About this many characters of postings per record. */
const POSTINGS_CHARS_PER_RECORD = 256 * 1024;

/**
 * One owner's conversations of one workspace, in memory (adr/0046): summaries sorted for list,
 * and an inverted index from each word to the events holding it for search, so neither reads a
 * log. Postings are numbers, not objects: a word's one posting is the number itself, more are a
 * flat array. Bounded in bytes (adr/0078): an event's first termsPerEvent distinct words and a
 * conversation's first postingsPerConversation pairs are indexed, and nothing more once the
 * partition's estimate reaches partitionBytes; a conversation with words left out is `partial`.
 * A removed conversation's postings stay until enough pile up to compact. Moved only by what
 * the logs hold: `apply` an append's events, `remove` a deleted log.
 */
export class PartitionIndex {
  private readonly entries = new Map<string, Entry>();
  private readonly byOrdinal: Array<Entry | undefined> = [];
  private readonly postings = new Map<string, number | number[]>();
  /** Every summary, most recently updated first. */
  private readonly order: ConversationSummary[] = [];
  private bytes = 0;
  private deadBytes = 0;

  constructor(private readonly limits: IndexLimits = INDEX_LIMITS) {}

  get size(): number {
    return this.entries.size;
  }

  /** The estimated bytes the index holds in memory, removed conversations' included until compacted. */
  get estimatedBytes(): number {
    return this.bytes;
  }

  /** The estimated bytes of removed conversations' postings, held until they are compacted away. */
  get removedBytes(): number {
    return this.deadBytes;
  }

  /** How many conversations have words the index left out (adr/0078). */
  get partialCount(): number {
    let count = 0;
    for (const entry of this.entries.values()) if (entry.partial) count += 1;
    return count;
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
      entry = {
        ordinal: this.byOrdinal.length,
        summary: summarize(id, events),
        bytes,
        postings: 0,
        partial: false,
        cost: ENTRY_BYTES,
      };
      this.bytes += ENTRY_BYTES;
      this.entries.set(id, entry);
      this.byOrdinal.push(entry);
    }
    for (const event of events) this.index(entry, event);
    entry.bytes = bytes;
    this.order.splice(firstAfter(this.order, entry.summary), 0, entry.summary);
  }

  remove(id: string): void {
    const entry = this.entries.get(id);
    if (!entry) return;
    this.unorder(entry.summary);
    this.entries.delete(id);
    this.byOrdinal[entry.ordinal] = undefined;
    this.deadBytes += entry.cost;
    if (this.deadBytes >= COMPACT_AFTER_DEAD_BYTES && this.deadBytes * 2 >= this.bytes - this.deadBytes) {
      this.compact();
    }
  }

  /**
   * Up to `limit` summaries after `after` (from the first when undefined), and whether more follow.
   * Copies, as every summary this index answers: its own are moved in place by `apply`, and a
   * caller reads them after the partition's lock is released (a page's cursor, an MCP answer
   * serialised later), when an append may have moved them (finder.test.ts "an append racing").
   */
  page(after: ListPosition | undefined, limit: number): { summaries: ConversationSummary[]; more: boolean } {
    const start = after === undefined ? 0 : firstAfter(this.order, after);
    return {
      summaries: this.order.slice(start, start + limit).map((summary) => ({ ...summary })),
      more: start + limit < this.order.length,
    };
  }

  /**
   * The conversations with an event holding every word of `query`, most recently updated first,
   * after `after`, up to `limit`; each with the seqs of those events. The postings it walks give
   * the event loop back every SEARCH_KEYS_PER_TURN (adr/0115), at most searchPostings of them, past
   * which it answers what it found, `truncated`, and `rest`: the oldest matching event it found,
   * below which every match it did not reach was indexed (adr/0140). With a `part` it searches only
   * the events that part walks, and answers undefined when a word's postings no longer hold one of
   * its events (its conversation deleted, or the index built again from the logs). The caller holds
   * the partition's lock, so nothing changes the index meanwhile, and other partitions' work goes on.
   */
  async search(
    query: string,
    after: ListPosition | undefined,
    limit: number,
    turns?: SearchTurns,
  ): Promise<SearchAnswer>;
  async search(
    query: string,
    after: ListPosition | undefined,
    limit: number,
    turns: SearchTurns | undefined,
    part: SearchPart,
  ): Promise<SearchAnswer | undefined>;
  async search(
    query: string,
    after: ListPosition | undefined,
    limit: number,
    turns = new SearchTurns(this.limits.searchPostings),
    part: SearchPart = {},
  ): Promise<SearchAnswer | undefined> {
    const lists = this.postingLists(query, part);
    if (!lists) return undefined;
    lists.sort((a, b) => a.end - a.start - (b.end - b.start));
    const keys = await keysInAll(lists, turns);
    const found = new Map<Entry, number[]>();
    let [rest, top]: (EventPlace | undefined)[] = [];
    await walkInTurns(keys, turns, (key) => {
      const entry = this.byOrdinal[Math.floor(key / SEQ_SPAN)];
      if (!entry) return;
      // Keys come oldest first: the first of a live conversation is where the rest lies below.
      top = { id: entry.summary.id, seq: key % SEQ_SPAN };
      rest ??= top;
      if (after !== undefined && compareRecentFirst(entry.summary, after) <= 0) return;
      const seqs = found.get(entry);
      if (seqs) seqs.push(key % SEQ_SPAN);
      else found.set(entry, [key % SEQ_SPAN]);
    });
    const hits: SearchHit[] = [];
    for (const [entry, seqs] of found) {
      // Seqs are below SEQ_SPAN (2^21): sorted as numbers, without a comparator.
      hits.push({ summary: entry.summary, seqs: Array.from(Uint32Array.from(seqs).sort()) });
      await turns.walk(seqs.length);
    }
    hits.sort((a, b) => compareRecentFirst(a.summary, b.summary));
    // Copies of the summaries, as `page` answers them.
    const answered = hits.slice(0, limit).map((hit) => ({ summary: { ...hit.summary }, seqs: hit.seqs }));
    const answer: SearchAnswer = { hits: answered, more: hits.length > limit, truncated: turns.cut, top };
    // A cut walk that found no live match has no place known to be the same in every list.
    if (turns.cut && rest) answer.rest = rest;
    return answer;
  }

  /** Each word's postings, the part `part` walks; undefined when one does not hold its events. */
  private postingLists(query: string, part: SearchPart): PostingList[] | undefined {
    const words = tokenize(query).map((word) => keysOf(this.postings.get(word)));
    const [from, below, top] = [this.keyOf(part.from), this.keyOf(part.below), this.keyOf(part.top)];
    if (from === null || below === null) return undefined;
    // A top whose conversation was deleted since unpins the walk rather than refusing the page.
    return listsWithin(words, from, below, top ?? undefined);
  }

  /** The posting of an event: undefined for none, null when the index does not hold its conversation. */
  private keyOf(place: EventPlace | undefined): number | undefined | null {
    if (place === undefined) return undefined;
    const entry = this.entries.get(place.id);
    return entry && place.seq <= MAX_EVENT_SEQ ? entry.ordinal * SEQ_SPAN + place.seq : null;
  }

  /** The index as snapshot records, each of bounded size, made one at a time as they are written. */
  *snapshotRecords(): Generator<SnapshotRecord> {
    const conversations = [...this.entries.values()];
    for (let at = 0; at < conversations.length; at += CONVERSATIONS_PER_RECORD) {
      yield {
        conversations: conversations
          .slice(at, at + CONVERSATIONS_PER_RECORD)
          .map(({ ordinal, summary, bytes, postings, partial }) => ({
            ordinal,
            summary,
            bytes,
            postings,
            partial,
          })),
      };
    }
    let chunk: Record<string, string> = {};
    let chars = 0;
    for (const [word, value] of this.postings) {
      // Removed conversations' postings are left out word by word, not compacted away first in one
      // turn (adr/0084); a snapshot holds none, since an index loaded from it could not count them.
      const keys = this.deadBytes === 0 ? keysOf(value) : keysOf(value).filter((key) => this.isLive(key));
      if (keys.length === 0) continue;
      const encoded = Buffer.from(Float64Array.from(keys).buffer).toString("base64");
      chunk[word] = encoded;
      chars += word.length + encoded.length;
      if (chars >= POSTINGS_CHARS_PER_RECORD) {
        yield { postings: chunk };
        chunk = {};
        chars = 0;
      }
    }
    if (chars > 0) yield { postings: chunk };
  }

  /**
   * The index snapshot records hold, read one at a time; undefined when one is not a record
   * this code wrote.
   */
  static async fromSnapshot(
    records: AsyncIterable<unknown>,
    limits: IndexLimits = INDEX_LIMITS,
  ): Promise<PartitionIndex | undefined> {
    const index = new PartitionIndex(limits);
    for await (const record of records) {
      if (!index.restore(record)) return undefined;
    }
    index.order.sort(compareRecentFirst);
    return index;
  }

  /** Adds one snapshot record; false when it is not one this code wrote. */
  private restore(record: unknown): boolean {
    const { conversations, postings } = (record ?? {}) as { conversations?: unknown; postings?: unknown };
    if (Array.isArray(conversations)) {
      for (const item of conversations as SnapshotConversation[]) {
        const { ordinal, summary, bytes, postings: count, partial } = item ?? {};
        if (!Number.isSafeInteger(ordinal) || ordinal < 0 || ordinal >= 2 ** 32) return false;
        if (!Number.isSafeInteger(bytes) || !Number.isSafeInteger(count) || typeof partial !== "boolean")
          return false;
        if (typeof summary?.id !== "string" || !isConversationId(summary.id) || this.entries.has(summary.id))
          return false;
        const entry = {
          ordinal,
          summary,
          bytes,
          postings: count,
          partial,
          // Its postings' bytes are added as the postings records are read, after these.
          cost: ENTRY_BYTES,
        };
        this.entries.set(summary.id, entry);
        this.byOrdinal[ordinal] = entry;
        this.order.push(summary);
        this.bytes += ENTRY_BYTES;
      }
      return true;
    }
    if (typeof postings !== "object" || postings === null || Array.isArray(postings)) return false;
    for (const [word, encoded] of Object.entries(postings)) {
      const raw = Buffer.from(String(encoded), "base64");
      if (raw.length === 0 || raw.length % 8 !== 0) return false;
      const keys = new Array<number>(raw.length / 8);
      for (let i = 0; i < keys.length; i++) keys[i] = raw.readDoubleLE(i * 8);
      this.postings.set(word, keys.length === 1 ? (keys[0] as number) : keys);
      this.bytes += wordBytes(word, keys.length);
      // Each conversation is charged what `add` charged it (keys are in the order they were
      // added), not only its postings' 12 bytes: a removal counts what it frees, which decides
      // when a partition at its budget makes room for new words again (adr/0084).
      keys.forEach((key, at) => {
        const entry = this.byOrdinal[Math.floor(key / SEQ_SPAN)];
        if (entry) entry.cost += addedBytes(word, at);
      });
    }
    return true;
  }

  /** Indexes the words of one event, as far as the limits allow. */
  private index(entry: Entry, event: ConversationEvent): void {
    const text = eventText(event);
    if (text === "") return;
    // Its key would be another conversation's (partition-index.test.ts "numbered past").
    if (event.seq > MAX_EVENT_SEQ) {
      entry.partial = true;
      return;
    }
    // At the budget, removed conversations' postings keep this event's words out, so they are
    // compacted away sooner than `remove` would, but only once they are 1 MiB or half the live
    // bytes: compacting for every removal made each event after one walk every posting, 220–315 ms
    // for a full partition (adr/0084; partition-index.test.ts "at its budget").
    if (
      this.bytes >= this.limits.partitionBytes &&
      (this.deadBytes >= COMPACT_AFTER_DEAD_BYTES || this.deadBytes * 2 >= this.bytes - this.deadBytes)
    ) {
      this.compact();
    }
    const room =
      this.bytes >= this.limits.partitionBytes
        ? 0
        : Math.min(this.limits.termsPerEvent, this.limits.postingsPerConversation - entry.postings);
    const { words, more } = distinctWords(text, room);
    if (more) entry.partial = true;
    const key = entry.ordinal * SEQ_SPAN + event.seq;
    const before = this.bytes;
    for (const word of words) this.add(word, key);
    entry.postings += words.length;
    entry.cost += this.bytes - before;
  }

  private add(word: string, key: number): void {
    const value = this.postings.get(word);
    if (value === undefined) {
      this.postings.set(word, key);
      this.bytes += addedBytes(word, 0);
    } else if (typeof value === "number") {
      this.postings.set(word, [value, key]);
      this.bytes += addedBytes(word, 1);
    } else {
      this.bytes += addedBytes(word, value.length);
      value.push(key);
    }
  }

  /** Drops the postings of removed conversations and counts the bytes again. */
  private compact(): void {
    if (this.deadBytes === 0) return;
    let bytes = this.entries.size * ENTRY_BYTES;
    for (const [word, value] of this.postings) {
      const live = keysOf(value).filter((key) => this.isLive(key));
      if (live.length === 0) {
        this.postings.delete(word);
        continue;
      }
      this.postings.set(word, live.length === 1 ? (live[0] as number) : live);
      bytes += wordBytes(word, live.length);
    }
    this.bytes = bytes;
    this.deadBytes = 0;
  }

  /** Whether a posting is of a conversation the index still holds. */
  private isLive(key: number): boolean {
    return this.byOrdinal[Math.floor(key / SEQ_SPAN)] !== undefined;
  }

  private unorder(summary: ConversationSummary): void {
    // The entry just before the first one after it: the summary itself.
    const at = firstAfter(this.order, summary) - 1;
    if (this.order[at] === summary) this.order.splice(at, 1);
  }
}
