import { type EventNumbers, SEQ_SPAN } from "./event-numbers.ts";
import { tokenize } from "./event-text.ts";
import { compareRecentFirst, type ListPosition } from "./list-order.ts";
import type { ConversationSummary } from "./model.ts";
import { keysInAll, keysOf, listsWithin, type SearchTurns, walkInTurns } from "./postings.ts";
import type { SearchAnswer, SearchHit, SearchPart } from "./search-answer.ts";

/** What a search reads of a partition's index (partition-index.ts), which it does not change. */
export interface SearchedIndex {
  postings: ReadonlyMap<string, number | number[]>;
  numbers: EventNumbers;
  /** The summary of the conversation of `ordinal`; undefined once it is removed. */
  summaryOf(ordinal: number): ConversationSummary | undefined;
}

/**
 * The conversations with an event holding every word of `query`, most recently updated first,
 * after `after`, up to `limit`; each with the seqs of those events, among the events `part` walks.
 * The postings it walks give the event loop back every SEARCH_KEYS_PER_TURN (adr/0115), at most
 * the budget `turns` holds, past which it answers what it found, `truncated`, and `reach`: every
 * match numbered from it on was walked, and those below it are the rest (adr/0140, 0144).
 */
export async function searchIndex(
  index: SearchedIndex,
  query: string,
  after: ListPosition | undefined,
  limit: number,
  turns: SearchTurns,
  part: SearchPart,
): Promise<SearchAnswer> {
  const top = part.hi ?? index.numbers.next;
  const lists = listsWithin(
    tokenize(query).map((word) => keysOf(index.postings.get(word))),
    part.lo,
    top,
  );
  lists.sort((a, b) => a.end - a.start - (b.end - b.start));
  const { keys, reach } = await keysInAll(lists, turns);
  const found = new Map<number, SearchHit>();
  await walkInTurns(keys, turns, (key) => {
    const place = index.numbers.placeOf(key);
    const ordinal = Math.floor(place / SEQ_SPAN);
    const hit = found.get(ordinal);
    if (hit) {
      hit.seqs.push(place % SEQ_SPAN);
      return;
    }
    const summary = index.summaryOf(ordinal);
    if (!summary || (after !== undefined && compareRecentFirst(summary, after) <= 0)) return;
    found.set(ordinal, { summary, seqs: [place % SEQ_SPAN] });
  });
  const hits: SearchHit[] = [];
  for (const { summary, seqs } of found.values()) {
    // Seqs are below SEQ_SPAN (2^21): sorted as numbers, without a comparator.
    hits.push({ summary, seqs: Array.from(Uint32Array.from(seqs).sort()) });
    await turns.walk(seqs.length);
  }
  hits.sort((a, b) => compareRecentFirst(a.summary, b.summary));
  // Copies of the summaries, as `page` answers them: an append moves the index's own in place.
  const answered = hits.slice(0, limit).map((hit) => ({ summary: { ...hit.summary }, seqs: hit.seqs }));
  const answer: SearchAnswer = { hits: answered, more: hits.length > limit, truncated: turns.cut, top };
  if (reach !== undefined) answer.reach = reach;
  return answer;
}
