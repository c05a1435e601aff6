import { setImmediate as nextTurn } from "node:timers/promises";

/**
 * Postings one search walks between two turns of the event loop (adr/0115). A full partition
 * holds about 5.5 million postings, and a query's words may each be in most of them: walked in
 * one turn, a search held the loop for 0.1–0.9 s. At about 0.1 µs a posting this is a few
 * milliseconds a turn (partition-index.test.ts "gives the event loop back").
 */
export const SEARCH_KEYS_PER_TURN = 32 * 1024;

/** A word's postings as a list of keys: the index keeps one as the number itself, more as an array. */
export function keysOf(value: number | number[] | undefined): number[] {
  if (value === undefined) return [];
  return typeof value === "number" ? [value] : value;
}

/**
 * Counts the postings a search walks, gives the event loop back every SEARCH_KEYS_PER_TURN of
 * them (`turns` says how often it did), and holds the search to its budget of postings; `cut`
 * says the budget stopped a walk before the start of the part of a list it walks.
 */
export class SearchTurns {
  private walked = 0;
  private left: number;
  turns = 0;
  cut = false;

  /** `budget`: the postings this search may walk in its words' lists (IndexLimits.searchPostings). */
  constructor(budget: number) {
    this.left = budget;
  }

  /**
   * The postings one of `lists` more lists may walk: an even share of what is left, so each gets
   * some, and at least one, so a walk the budget cuts short always walked a key of each list it cut
   * and a search that goes on below it makes progress (adr/0144).
   */
  share(lists: number): number {
    return Math.max(1, Math.floor(this.left / lists));
  }

  /** Counts `keys` more postings walked; a turn of the loop is given back once enough are. */
  async walk(keys: number): Promise<void> {
    this.left -= keys;
    this.walked += keys;
    if (this.walked < SEARCH_KEYS_PER_TURN) return;
    this.walked = 0;
    this.turns += 1;
    await nextTurn();
  }
}

/**
 * The part of a word's postings a search walks: its keys from `start` up to before `end`, from the
 * one just before `end` back. Keys are event numbers (event-numbers.ts), so each list is sorted,
 * and a part of the search (adr/0140, 0144) is the same range of numbers in every list.
 */
export interface PostingList {
  keys: readonly number[];
  start: number;
  end: number;
}

/**
 * Each list's keys from `lo` (its start when undefined) up to before `hi` (its end when undefined),
 * each bound found by a binary search: a list holds events in the order they were numbered, so a
 * bound is a place in every list, whether or not the list holds it.
 */
export function listsWithin(
  lists: readonly (readonly number[])[],
  lo: number | undefined,
  hi: number | undefined,
): PostingList[] {
  return lists.map((keys) => ({
    keys,
    start: lo === undefined ? 0 : firstAtLeast(keys, lo),
    end: hi === undefined ? keys.length : firstAtLeast(keys, hi),
  }));
}

/** Where the first key not below `key` is in the sorted `keys`; their length when there is none. */
function firstAtLeast(keys: readonly number[], key: number): number {
  let [low, high] = [0, keys.length];
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((keys[middle] as number) < key) low = middle + 1;
    else high = middle;
  }
  return low;
}

/**
 * What a walk of the lists found: the keys every list holds, oldest first, and, when the budget cut
 * it short, `reach`, the lowest key from which on every key was walked in every list that needed it:
 * every key at or above it that every list holds is answered, and those below it are where the
 * search goes on. A key, not an event: it may be a removed conversation's, and it is always above
 * the range's start, so a search that goes on below it always walks something new (adr/0144).
 */
export interface WalkedKeys {
  keys: readonly number[];
  reach?: number;
}

/**
 * The keys every one of `lists` holds, in the order they were indexed (oldest first), within the
 * search's budget of postings. The lists are walked shortest first, each from its end back, at
 * most its share of the budget: keys are numbered in the order events are indexed, so a walk the
 * budget cuts short keeps the latest events, and a key is answered only if every list was seen to
 * hold it; the keys the budget left unseen are below `reach`, and `turns.cut` says so. A key is
 * counted by each list in turn only while every list before held it, a list's walk stops once it
 * has counted every key still held, and the walk stops once no key is left.
 */
export async function keysInAll(lists: readonly PostingList[], turns: SearchTurns): Promise<WalkedKeys> {
  const [first, ...others] = lists;
  if (!first) return { keys: [] };
  let reach: number | undefined;
  /** Notes that a list's walk stopped at `stop`, above its start: nothing below it was seen. */
  const cutAt = (list: PostingList, stop: number) => {
    turns.cut = true;
    reach = Math.max(reach ?? 0, list.keys[stop] as number);
  };
  if (others.length === 0) {
    const take = Math.min(first.end - first.start, turns.share(1));
    if (take < first.end - first.start) cutAt(first, first.end - take);
    await turns.walk(take);
    // The list itself when walked whole: a common word's is a million keys, not to be copied.
    const keys = take === first.keys.length ? first.keys : first.keys.slice(first.end - take, first.end);
    return reach === undefined ? { keys } : { keys, reach };
  }
  /** Each key of `first` walked, and how many of the lists walked so far held it, up to the first that did not. */
  const counts = new Map<number, number>();
  await walkBack(first, turns, lists.length, cutAt, (key) => {
    counts.set(key, 1);
    return false;
  });
  let held = counts.size;
  for (let round = 1; round <= others.length && held > 0; round++) {
    const counted = held;
    held = 0;
    await walkBack(others[round - 1] as PostingList, turns, lists.length - round, cutAt, (key) => {
      if (counts.get(key) !== round) return false;
      counts.set(key, round + 1);
      held += 1;
      return held === counted;
    });
  }
  const keys: number[] = [];
  if (held > 0) for (const [key, count] of counts) if (count === lists.length) keys.push(key);
  // Counted from the first list's end back: the newest first.
  keys.reverse();
  return reach === undefined ? { keys } : { keys, reach };
}

/**
 * Calls `visit` on the keys of `list` from its end back until it answers true, within the share
 * of the search's budget of one of `lists` lists still to walk; a walk that share stops before the
 * list's `start` calls `cut` with where it stopped. Gives the event loop back as `turns` says.
 */
async function walkBack(
  list: PostingList,
  turns: SearchTurns,
  lists: number,
  cut: (list: PostingList, stop: number) => void,
  visit: (key: number) => boolean,
): Promise<void> {
  const { keys, start, end } = list;
  const stop = Math.max(start, end - turns.share(lists));
  for (let at = end; at > stop; ) {
    const from = Math.max(stop, at - SEARCH_KEYS_PER_TURN);
    let i = at - 1;
    while (i >= from && !visit(keys[i] as number)) i--;
    await turns.walk(at - Math.max(i, from));
    if (i >= from) return;
    at = from;
  }
  if (stop > start) cut(list, stop);
}

/** Calls `visit` on each key of `list`, giving the event loop back as `turns` says. */
export async function walkInTurns(
  list: readonly number[],
  turns: SearchTurns,
  visit: (key: number) => void,
): Promise<void> {
  for (let at = 0; at < list.length; at += SEARCH_KEYS_PER_TURN) {
    const end = Math.min(list.length, at + SEARCH_KEYS_PER_TURN);
    for (let i = at; i < end; i++) visit(list[i] as number);
    await turns.walk(end - at);
  }
}
