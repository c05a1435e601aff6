/** What bounds one partition's index (adr/0078) and one search of it (adr/0120); the defaults are INDEX_LIMITS. */
export interface IndexLimits {
  /** Distinct words indexed per event: its first ones, in the order its text holds them. */
  termsPerEvent: number;
  /** (word, event) pairs indexed per conversation: those of its earliest events. */
  postingsPerConversation: number;
  /** The estimated bytes past which this partition indexes no more words. */
  partitionBytes: number;
  /** Postings one search may walk in its words' lists, all together; past it, `truncated` (adr/0120). */
  searchPostings: number;
}

export const INDEX_LIMITS: IndexLimits = {
  termsPerEvent: 2_000,
  postingsPerConversation: 200_000,
  partitionBytes: 64 * 1024 * 1024,
  // A full partition's 16 words held everywhere walked 5.8 million postings, 210–340 ms of CPU a
  // search; this many cost 33–70 ms, and no search of text-like words needed more (adr/0120).
  searchPostings: 1024 * 1024,
};
