import type { ConversationSummary } from "./model.ts";

// What one search of a partition's index answers (index-search.ts), and where a search its
// budget of postings cut short goes on from (adr/0140, 0144).

/** A conversation the query matched, and the seqs of its matching events, oldest first. */
export interface SearchHit {
  summary: ConversationSummary;
  seqs: number[];
}

/**
 * The events one part of a search walks (adr/0140): those numbered from `lo` (the first when
 * undefined) up to before `hi` (every one numbered so far when undefined). Numbers, not events
 * (event-numbers.ts): a bound is a place in every word's list whether or not an event of that
 * number is still indexed.
 */
export interface SearchPart {
  lo?: number | undefined;
  hi?: number | undefined;
}

/** What one search answers; `reach`, when its budget cut it, is where a search of the rest goes on below. */
export interface SearchAnswer {
  hits: SearchHit[];
  more: boolean;
  truncated: boolean;
  /** Every matching event numbered from it on, up to `top`, was walked; set when the walk was cut. */
  reach?: number;
  /** The part's `hi`, or the next event number when it had none: what the part's later pages walk below. */
  top: number;
}
