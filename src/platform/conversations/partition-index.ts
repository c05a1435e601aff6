import { SEQ_SPAN } from "./event-numbers.ts";
import { distinctWords, eventText } from "./event-text.ts";
import { INDEX_LIMITS, type IndexLimits } from "./index-limits.ts";
import { ENTRY_BYTES, EVENT_BYTES } from "./index-memory.ts";
import { searchIndex } from "./index-search.ts";
import type { SnapshotConversation, SnapshotRecord, SnapshotTotals } from "./index-snapshot.ts";
import { MAX_EVENT_SEQ } from "./limits.ts";
import { compareRecentFirst, firstAfter, type ListPosition } from "./list-order.ts";
import {
  type ConversationEvent,
  type ConversationSummary,
  foldEvent,
  isConversationId,
  summarize,
} from "./model.ts";
import { SearchTurns } from "./postings.ts";
import type { SearchAnswer, SearchPart } from "./search-answer.ts";
import { WordPostings } from "./word-postings.ts";

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
  /** How many of its events are numbered (event-numbers.ts): those with a word indexed. */
  numbered: number;
  /** How many of its postings a snapshot restored, checked against `postings` when it is loaded. */
  restored: number;
}

const CONVERSATIONS_PER_RECORD = 1000;

/**
 * One owner's conversations of one workspace, in memory (adr/0046): summaries sorted for list,
 * and an inverted index from each word to the events holding it for search (word-postings.ts),
 * so neither reads a log. Bounded in bytes (adr/0078): an event's first termsPerEvent distinct
 * words and a conversation's first postingsPerConversation pairs are indexed, and nothing more
 * once the partition's estimate reaches partitionBytes; a conversation with words left out is
 * `partial`.
 * A removed conversation's postings stay until enough pile up to compact. Moved only by what
 * the logs hold: `apply` an append's events, `remove` a deleted log.
 */
export class PartitionIndex {
  private readonly entries = new Map<string, Entry>();
  private readonly byOrdinal: Array<Entry | undefined> = [];
  /**
   * Above every ordinal an entry or a numbered slot ever had: a removed conversation's slots keep
   * its ordinal until a renumbering, so giving it again would credit them to a new conversation
   * (partition-index.test.ts "never gives an ordinal twice").
   */
  private nextOrdinal = 0;
  private readonly words = new WordPostings();
  /** Every summary, most recently updated first. */
  private readonly order: ConversationSummary[] = [];
  private bytes = 0;
  private deadBytes = 0;

  constructor(private readonly limits: IndexLimits = INDEX_LIMITS) {}

  get size(): number {
    return this.entries.size;
  }

  /**
   * Names the numbering of this index's events: a search cursor holds it, and one of another
   * generation is refused (adr/0144). Written in its snapshot, and read back with it, though a load
   * may renew it (ConversationIndexes); new for an index built from the logs.
   */
  get generation(): string {
    return this.words.numbers.generation;
  }

  /**
   * The generation and how many events it numbered: the same at two times only when no event was
   * numbered in between, since numbers only grow within a generation.
   */
  get numbering(): string {
    return `${this.generation}/${this.words.numbers.next}`;
  }

  /**
   * Called when a cursor given out may mean other events than this index's numbers name: by a
   * load that caught a snapshot up from the logs, or that cannot tell whether the index that
   * wrote the snapshot numbered more events after it (partition-load.ts).
   */
  renewGeneration(): void {
    this.words.numbers.renew();
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
        ordinal: this.nextOrdinal++,
        summary: summarize(id, events),
        bytes,
        postings: 0,
        partial: false,
        cost: ENTRY_BYTES,
        numbered: 0,
        restored: 0,
      };
      this.bytes += ENTRY_BYTES;
      this.entries.set(id, entry);
      this.byOrdinal[entry.ordinal] = entry;
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
    this.words.deadSlots += entry.numbered;
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
   * after `after`, up to `limit`, among the events `part` walks (all when undefined); each with the
   * seqs of those events (index-search.ts). At most searchPostings postings are walked, past which
   * it answers what it found, `truncated`, and `reach`, where the rest lies below (adr/0120, 0140,
   * 0144). The caller holds the partition's lock, so nothing changes the index meanwhile, and
   * other partitions' work goes on.
   */
  search(
    query: string,
    after: ListPosition | undefined,
    limit: number,
    turns = new SearchTurns(this.limits.searchPostings),
    part: SearchPart = {},
  ): Promise<SearchAnswer> {
    const { lists: postings, numbers } = this.words;
    const summaryOf = (ordinal: number) => this.byOrdinal[ordinal]?.summary;
    return searchIndex({ postings, numbers, summaryOf }, query, after, limit, turns, part);
  }

  /** The index as snapshot records, each of bounded size, made one at a time as they are written. */
  *snapshotRecords(): Generator<SnapshotRecord> {
    yield { generation: this.generation };
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
    yield* this.words.records(this.isLive, this.deadBytes > 0);
    let postings = 0;
    for (const entry of conversations) postings += entry.postings;
    yield { end: { conversations: conversations.length, events: this.words.numbers.next, postings } };
  }

  /**
   * The index snapshot records hold, read one at a time; undefined when one is not a record
   * this code wrote. Throws when they end before their end record, or hold other totals than it
   * says: a snapshot is renamed into place whole, so it was cut or lost lines on disk since, and
   * read, searches would silently miss the lost words under numbers old cursors still trust
   * (index-snapshot.test.ts "cut at a line boundary").
   */
  static async fromSnapshot(
    records: AsyncIterable<unknown>,
    limits: IndexLimits = INDEX_LIMITS,
  ): Promise<PartitionIndex | undefined> {
    const index = new PartitionIndex(limits);
    /**
     * Postings restored of ordinals no conversation of the snapshot has. Those of a conversation
     * are counted on its entry: a Map of counts, a get and a set per posting, made a 10,000
     * conversation partition load in 300 ms instead of 190 (adr/0144).
     */
    const unheld = { postings: 0 };
    let totals: unknown;
    for await (const record of records) {
      // Nothing follows the end record.
      if (totals !== undefined) return undefined;
      const { end } = (record ?? {}) as { end?: unknown };
      if (end !== undefined) totals = end;
      else if (!index.restore(record, unheld)) return undefined;
    }
    if (totals === undefined) throw new Error("conversation index snapshot ends before its end record");
    if (!index.holds(totals, unheld.postings)) {
      throw new Error("conversation index snapshot holds other totals than its end record says");
    }
    index.order.sort(compareRecentFirst);
    index.nextOrdinal = index.byOrdinal.length;
    index.words.numbers.forEach((place) => {
      const ordinal = Math.floor(place / SEQ_SPAN);
      const entry = index.byOrdinal[ordinal];
      index.bytes += EVENT_BYTES;
      index.nextOrdinal = Math.max(index.nextOrdinal, ordinal + 1);
      if (!entry) index.words.deadSlots += 1;
      else {
        entry.cost += EVENT_BYTES;
        entry.numbered += 1;
      }
    });
    return index;
  }

  /**
   * Whether the restored index holds what the end record says: as many conversations, numbered
   * events and postings, and each conversation as many postings as it counts, so none of them
   * (`unheld`) is a conversation's the snapshot does not hold.
   */
  private holds(totals: unknown, unheld: number): boolean {
    const { conversations, events, postings } = (totals ?? {}) as Partial<SnapshotTotals>;
    if (conversations !== this.entries.size || events !== this.words.numbers.next) return false;
    let total = unheld;
    for (const entry of this.entries.values()) {
      if (entry.restored !== entry.postings) return false;
      total += entry.restored;
    }
    return postings === total;
  }

  /**
   * Adds one snapshot record, counting the postings restored on their conversation's entry, or in
   * `unheld` when the snapshot holds no conversation of their ordinal; false when it is not one
   * this code wrote. Records come as `snapshotRecords` makes them: the generation, conversations,
   * numbers, postings, then the end.
   */
  private restore(record: unknown, unheld: { postings: number }): boolean {
    const { generation, conversations, events, postings } = (record ?? {}) as Partial<
      Record<"generation" | "conversations" | "events" | "postings", unknown>
    >;
    if (generation !== undefined) return this.words.numbers.restoreGeneration(generation);
    if (events !== undefined) return this.words.numbers.restore(events);
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
          // Its postings' and numbers' bytes are added as their records are read, after these.
          cost: ENTRY_BYTES,
          numbered: 0,
          restored: 0,
        };
        this.entries.set(summary.id, entry);
        this.byOrdinal[ordinal] = entry;
        this.order.push(summary);
        this.bytes += ENTRY_BYTES;
      }
      return true;
    }
    const added = this.words.restore(postings, (ordinal, bytes) => {
      const entry = this.byOrdinal[ordinal];
      if (!entry) unheld.postings += 1;
      else {
        entry.cost += bytes;
        entry.restored += 1;
      }
    });
    if (added === undefined) return false;
    this.bytes += added;
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
    if (words.length === 0) return;
    const added = this.words.add(entry.ordinal, event.seq, words);
    this.bytes += added;
    entry.cost += added;
    entry.numbered += 1;
    entry.postings += words.length;
  }

  /** Drops the postings of removed conversations and counts the bytes again. */
  private compact(): void {
    if (this.deadBytes === 0) return;
    this.bytes = this.entries.size * ENTRY_BYTES + this.words.compact(this.isLive);
    this.deadBytes = 0;
  }

  /** Whether the conversation of an ordinal is one the index still holds. */
  private readonly isLive = (ordinal: number): boolean => this.byOrdinal[ordinal] !== undefined;

  private unorder(summary: ConversationSummary): void {
    // The entry just before the first one after it: the summary itself.
    const at = firstAfter(this.order, summary) - 1;
    if (this.order[at] === summary) this.order.splice(at, 1);
  }
}
