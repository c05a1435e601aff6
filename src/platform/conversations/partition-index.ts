import { eventText, tokenize } from "./event-text.ts";
import { compareRecentFirst, firstAfter, type ListPosition } from "./list-order.ts";
import { type ConversationEvent, type ConversationSummary, foldEvent, summarize } from "./model.ts";

/** What the index holds of one conversation. */
interface Entry {
  summary: ConversationSummary;
  /** The log's bytes this entry covers: the end of its last whole line when it was indexed. */
  bytes: number;
  /** Each word of the conversation and the seqs of the events that hold it, ascending. */
  terms: Map<string, number[]>;
}

/** A conversation the query matched, and the seqs of its matching events, oldest first. */
export interface SearchHit {
  summary: ConversationSummary;
  seqs: number[];
}

/** What the index's snapshot on disk holds of one conversation (index-snapshot.ts). */
export interface SnapshotEntry {
  summary: ConversationSummary;
  bytes: number;
  terms: Record<string, number[]>;
}

/**
 * One owner's conversations of one workspace, in memory: summaries sorted for list, and an
 * inverted index (word → conversations, and per conversation word → event seqs) for search, so
 * neither reads a log (adr/0046). It is moved only by what the logs hold: `apply` an
 * append's events, `remove` a deleted log; conversation-indexes.ts keeps it in step with disk.
 */
export class PartitionIndex {
  private readonly entries = new Map<string, Entry>();
  private readonly postings = new Map<string, Set<string>>();
  /** Every summary, most recently updated first. */
  private readonly order: ConversationSummary[] = [];

  get size(): number {
    return this.entries.size;
  }

  /** How many bytes of the log the index covers; undefined when it holds nothing of it. */
  bytesOf(id: string): number | undefined {
    return this.entries.get(id)?.bytes;
  }

  /** Adds events read from a log (from the start, or from `bytesOf`) and moves the coverage to `bytes`. */
  apply(id: string, events: readonly ConversationEvent[], bytes: number): void {
    let entry = this.entries.get(id);
    if (!entry) {
      entry = { summary: summarize(id, []), bytes: 0, terms: new Map() };
      if (events.length === 0) return;
      entry.summary = summarize(id, events);
      this.entries.set(id, entry);
    } else {
      this.unorder(entry.summary);
      for (const event of events) foldEvent(entry.summary, event);
    }
    for (const event of events) this.addTerms(id, entry, event);
    entry.bytes = bytes;
    this.order.splice(firstAfter(this.order, entry.summary), 0, entry.summary);
  }

  remove(id: string): void {
    const entry = this.entries.get(id);
    if (!entry) return;
    this.unorder(entry.summary);
    for (const word of entry.terms.keys()) {
      const holders = this.postings.get(word);
      holders?.delete(id);
      if (holders?.size === 0) this.postings.delete(word);
    }
    this.entries.delete(id);
  }

  ids(): IterableIterator<string> {
    return this.entries.keys();
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
    const words = tokenize(query);
    const sets = words.map((word) => this.postings.get(word) ?? new Set<string>());
    sets.sort((a, b) => a.size - b.size);
    const [smallest, ...others] = sets;
    if (!smallest) return { hits: [], more: false };
    const hits: SearchHit[] = [];
    for (const id of smallest) {
      if (!others.every((set) => set.has(id))) continue;
      const entry = this.entries.get(id) as Entry;
      if (after !== undefined && compareRecentFirst(entry.summary, after) <= 0) continue;
      const seqs = intersect(words.map((word) => entry.terms.get(word) ?? []));
      if (seqs.length > 0) hits.push({ summary: entry.summary, seqs });
    }
    hits.sort((a, b) => compareRecentFirst(a.summary, b.summary));
    return { hits: hits.slice(0, limit), more: hits.length > limit };
  }

  toSnapshot(): SnapshotEntry[] {
    return [...this.entries.values()].map((entry) => ({
      summary: entry.summary,
      bytes: entry.bytes,
      terms: Object.fromEntries(entry.terms),
    }));
  }

  /** Takes an entry from a snapshot as it was; the caller has checked it against its log. */
  restore(snapshot: SnapshotEntry): void {
    const { summary } = snapshot;
    this.remove(summary.id);
    const terms = new Map(Object.entries(snapshot.terms));
    this.entries.set(summary.id, { summary, bytes: snapshot.bytes, terms });
    for (const word of terms.keys()) this.holders(word).add(summary.id);
    this.order.splice(firstAfter(this.order, summary), 0, summary);
  }

  private addTerms(id: string, entry: Entry, event: ConversationEvent): void {
    for (const word of tokenize(eventText(event))) {
      let seqs = entry.terms.get(word);
      if (!seqs) {
        seqs = [];
        entry.terms.set(word, seqs);
        this.holders(word).add(id);
      }
      // Events arrive in log order, so each list stays ascending without a sort.
      if (seqs[seqs.length - 1] !== event.seq) seqs.push(event.seq);
    }
  }

  private holders(word: string): Set<string> {
    let holders = this.postings.get(word);
    if (!holders) {
      holders = new Set();
      this.postings.set(word, holders);
    }
    return holders;
  }

  private unorder(summary: ConversationSummary): void {
    // The entry just before the first one after it: the summary itself.
    const at = firstAfter(this.order, summary) - 1;
    if (this.order[at] === summary) this.order.splice(at, 1);
  }
}

/** The values every ascending list holds. */
function intersect(lists: number[][]): number[] {
  const [first, ...rest] = [...lists].sort((a, b) => a.length - b.length);
  if (!first) return [];
  const others = rest.map((list) => new Set(list));
  return first.filter((seq) => others.every((set) => set.has(seq)));
}
