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

  /** The postings one of `lists` more lists may walk: an even share of what is left, so each gets some. */
  share(lists: number): number {
    return Math.floor(this.left / lists);
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
 * one just before `end` back. A search from the start walks the whole list; one resumed below an
 * event walks what was indexed before it, and a later page of a part no further back than the
 * part's first page reached (adr/0140).
 */
export interface PostingList {
  keys: readonly number[];
  start: number;
  end: number;
}

/**
 * Each list from the posting `from` (its start when undefined) up to the posting `below` (its end
 * when undefined; with `top`, up to that posting and including it), each found from the end back:
 * lists are not sorted, and appends since they were answered only add at the end. Undefined when
 * one of them does not hold one of those named.
 */
export function listsWithin(
  lists: readonly (readonly number[])[],
  from: number | undefined,
  below: number | undefined,
  top?: number,
): PostingList[] | undefined {
  const within: PostingList[] = [];
  for (const keys of lists) {
    // `below` is left out, `top` walked: one past it, or -1 when the list does not hold it.
    const topAt = top === undefined ? -1 : keys.lastIndexOf(top);
    const end =
      below !== undefined
        ? keys.lastIndexOf(below)
        : top === undefined
          ? keys.length
          : topAt < 0
            ? -1
            : topAt + 1;
    const start = from === undefined ? 0 : keys.lastIndexOf(from);
    if (end < 0 || start < 0 || (from !== undefined && start >= end)) return undefined;
    within.push({ keys, start, end });
  }
  return within;
}

/**
 * The keys every one of `lists` holds, in the order they were indexed (oldest first), within the
 * search's budget of postings. The lists are walked shortest first, each from its end back, at
 * most its share of the budget: postings are added in the order events are indexed, so a walk the
 * budget cuts short keeps the latest events, and a key is answered only if every list was seen to
 * hold it; the keys the budget left unseen are missing from the answer, and `turns.cut` says so.
 * Every key indexed after the oldest one answered was walked in every list, so it is answered too
 * if every list holds it: a search resumed below that key misses none and repeats none (adr/0140).
 * They are not sorted (an append to an older conversation adds a lower key), so each is walked,
 * not probed: a key is counted by each list in turn only while every list before held it, a list's
 * walk stops once it has counted every key still held, and the walk stops once no key is left.
 */
export async function keysInAll(
  lists: readonly PostingList[],
  turns: SearchTurns,
): Promise<readonly number[]> {
  const [first, ...others] = lists;
  if (!first) return [];
  if (others.length === 0) {
    const take = Math.min(first.end - first.start, turns.share(1));
    if (take < first.end - first.start) turns.cut = true;
    await turns.walk(take);
    // The list itself when walked whole: a common word's is a million keys, not to be copied.
    return take === first.keys.length ? first.keys : first.keys.slice(first.end - take, first.end);
  }
  /** Each key of `first` walked, and how many of the lists walked so far held it, up to the first that did not. */
  const counts = new Map<number, number>();
  await walkBack(first, turns, lists.length, (key) => {
    counts.set(key, 1);
    return false;
  });
  let held = counts.size;
  for (let round = 1; round <= others.length && held > 0; round++) {
    const counted = held;
    held = 0;
    await walkBack(others[round - 1] as PostingList, turns, lists.length - round, (key) => {
      if (counts.get(key) !== round) return false;
      counts.set(key, round + 1);
      held += 1;
      return held === counted;
    });
  }
  const keys: number[] = [];
  if (held > 0) for (const [key, count] of counts) if (count === lists.length) keys.push(key);
  // Counted from the first list's end back: the newest first.
  return keys.reverse();
}

/**
 * Calls `visit` on the keys of `list` from its end back until it answers true, within the share
 * of the search's budget of one of `lists` lists still to walk; a walk that share stops before the
 * list's `start` sets `turns.cut`. Gives the event loop back as `turns` says.
 */
async function walkBack(
  list: PostingList,
  turns: SearchTurns,
  lists: number,
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
  if (stop > start) turns.cut = true;
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
