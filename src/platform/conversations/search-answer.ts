import type { ConversationSummary } from "./model.ts";

// What one search of a partition's index answers (partition-index.ts), and where a search its
// budget of postings cut short goes on from (adr/0140).

/** A conversation the query matched, and the seqs of its matching events, oldest first. */
export interface SearchHit {
  summary: ConversationSummary;
  seqs: number[];
}

/** One event of one conversation: where a search cut short by its budget goes on from (adr/0140). */
export interface EventPlace {
  id: string;
  seq: number;
}

/**
 * The events one part of a search walks (adr/0140): those indexed before `below` (all when
 * undefined), back to `from` and including it (to the first when undefined), the oldest event an
 * earlier page of the part reached, so a later page never reaches further back than it did.
 */
export interface SearchPart {
  below?: EventPlace | undefined;
  from?: EventPlace | undefined;
  /**
   * The first part's top, which has no `below`: the newest live event its first page walked, and
   * the part's later pages walk down from it, including it, never postings added since.
   */
  top?: EventPlace | undefined;
}

/** What one search answers; `rest`, when its budget cut it, is where a search of the rest starts below. */
export interface SearchAnswer {
  hits: SearchHit[];
  more: boolean;
  truncated: boolean;
  rest?: EventPlace;
  /** The newest live matching event the walk met: where the first part's later pages walk down from. */
  top?: EventPlace;
}
