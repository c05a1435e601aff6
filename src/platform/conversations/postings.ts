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
 * Counts the postings a search walks and gives the event loop back every SEARCH_KEYS_PER_TURN of
 * them; `turns` says how often it did.
 */
export class SearchTurns {
  private walked = 0;
  turns = 0;

  /** Counts `keys` more postings walked; a turn of the loop is given back once enough are. */
  async walk(keys: number): Promise<void> {
    this.walked += keys;
    if (this.walked < SEARCH_KEYS_PER_TURN) return;
    this.walked = 0;
    this.turns += 1;
    await nextTurn();
  }
}

/**
 * The keys of `first` that every one of `others` holds too, in no particular order. The lists are
 * in the order their postings were added, not sorted (an append to an older conversation adds a
 * lower key), so each is walked, not probed: a key is counted by each list in turn only while every
 * list before held it, and the walk stops once no key is left to count. The event loop is given
 * back as `turns` says.
 */
export async function keysInAll(
  first: readonly number[],
  others: readonly (readonly number[])[],
  turns: SearchTurns,
): Promise<number[]> {
  /** Each key of `first`, and how many of the lists walked so far held it, up to the first that did not. */
  const counts = new Map<number, number>();
  await walkInTurns(first, turns, (key) => counts.set(key, 1));
  let held = counts.size;
  for (let round = 1; round <= others.length && held > 0; round++) {
    held = 0;
    await walkInTurns(others[round - 1] as readonly number[], turns, (key) => {
      if (counts.get(key) !== round) return;
      counts.set(key, round + 1);
      held += 1;
    });
  }
  const all = others.length + 1;
  const keys: number[] = [];
  if (held > 0) for (const [key, count] of counts) if (count === all) keys.push(key);
  return keys;
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
