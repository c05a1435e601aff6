import type { EventPageQuery } from "./event-page.ts";
import type { ConversationEvent } from "./model.ts";

/**
 * A checkpoint is kept at the first group that starts at least CHECKPOINT_EVENTS events and
 * CHECKPOINT_BYTES bytes after the previous one: a page reads about that much more than itself,
 * and a log holds at most one checkpoint per 64 events and per 64 KiB (256 for a 16 MiB log, about
 * 9 KB of heap). Measured in adr/0096: a newest page of 100 of a 16 MiB log costs 0.4-0.7 ms of CPU
 * at these values, 0.2-0.4 ms at a quarter of them (four times the memory), and 1.1-1.9 ms with a
 * checkpoint every 1,024 events.
 */
export const CHECKPOINT_EVENTS = 64;
export const CHECKPOINT_BYTES = 64 * 1024;

/** The bytes of a log to read for a page: whole groups, the first of them its `first`-th event of `count`. */
export interface PageRange {
  from: number;
  to: number;
  first: number;
  count: number;
}

/**
 * Where a log's groups start, sparsely (adr/0096): for each checkpoint, the seq of its group's
 * first event, the byte its first line starts at, and how many events come before it. Built by
 * the whole read that builds the log's head and extended by each append, both under the log's
 * lock. Seqs are kept as read, never assumed contiguous; the table answers only while each is
 * above the one before it (a hand edit can break that), so a seq is found by binary search.
 */
export class SeqOffsets {
  private readonly seqs: number[] = [];
  private readonly offsets: number[] = [];
  private readonly firsts: number[] = [];
  /** Events in the log up to its head's end. */
  private count = 0;
  private lastSeq = 0;
  /** False from the first seq not above the one before it: every page then reads the whole log. */
  private inOrder = true;

  /** Whether pages can be found through the table: every seq so far above the one before it. */
  get ordered(): boolean {
    return this.inOrder;
  }

  /** A whole group read or written at byte `start`, its events in log order. */
  add(start: number, events: readonly ConversationEvent[]): void {
    const firstEvent = events[0];
    if (!this.inOrder || firstEvent === undefined) return;
    const last = this.seqs.length - 1;
    if (
      last < 0 ||
      (this.count - (this.firsts[last] as number) >= CHECKPOINT_EVENTS &&
        start - (this.offsets[last] as number) >= CHECKPOINT_BYTES)
    ) {
      this.seqs.push(firstEvent.seq);
      this.offsets.push(start);
      this.firsts.push(this.count);
    }
    for (const { seq } of events) {
      if (seq <= this.lastSeq) {
        this.inOrder = false;
        return;
      }
      this.lastSeq = seq;
    }
    this.count += events.length;
  }

  /**
   * The bytes a page needs, up to the head's `end`: from the checkpoint at or before its first
   * event to the first checkpoint past its last one (or `end`). Whether more events follow the page
   * is told by `count`, so no event past it is read. Undefined when the seqs are out of order and
   * only the whole log can say where a page starts.
   */
  rangeFor(query: EventPageQuery, end: number): PageRange | undefined {
    if (!this.inOrder) return undefined;
    const { limit, after } = query;
    const n = this.seqs.length;
    const offsetAt = (i: number) => (i < n ? (this.offsets[i] as number) : end);
    const firstAt = (i: number) => (i < n ? (this.firsts[i] as number) : this.count);
    let from: number;
    let to: number;
    if (query.order === "oldest") {
      // The page starts at the first event whose seq is above `after`: no earlier than the last
      // checkpoint at or below it, no later than the next checkpoint's first event.
      from = after === undefined ? 0 : Math.max(0, countAtOrBelow(this.seqs, after) - 1);
      const latestStart = after === undefined || after < (this.seqs[0] ?? 0) ? 0 : firstAt(from + 1);
      to = countAtOrBelow(this.firsts, latestStart + limit - 1);
    } else {
      // The page ends at the last event whose seq is below `after` (the log's last without a
      // cursor): before the first checkpoint at or above it, at or after the one before that.
      to = after === undefined ? n : countAtOrBelow(this.seqs, after - 1);
      const earliestEnd = after === undefined ? this.count - 1 : to > 0 ? firstAt(to - 1) : 0;
      from = Math.max(0, countAtOrBelow(this.firsts, Math.max(0, earliestEnd - limit + 1)) - 1);
    }
    return { from: offsetAt(from), to: offsetAt(to), first: firstAt(from), count: this.count };
  }
}

/** How many of the first values of an ascending array are at or below `value` (binary search). */
function countAtOrBelow(values: readonly number[], value: number): number {
  let low = 0;
  let high = values.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((values[middle] as number) <= value) low = middle + 1;
    else high = middle;
  }
  return low;
}
