import { InvalidInput } from "../errors.ts";

// Cursors of the lists an app keeps sorted newest first by one time (files by creation,
// conversations by their last update): a cursor is the position of the last item given,
// not a reference to it, so an item deleted or moved between two pages never breaks the next.

/** A place in such a list: after this ISO time and id. */
export interface Position {
  time: string;
  id: string;
}

const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

/** Whether `value` is an ISO time as `Date.toISOString` writes it: what a position's time must be. */
export function isPositionTime(value: unknown): value is string {
  return typeof value === "string" && ISO_TIME.test(value);
}

/** Newest first, ties by id; plain comparison, as ISO times and hex ids sort by code unit. */
export function compareNewestFirst(a: Position, b: Position): number {
  if (a.time !== b.time) return a.time > b.time ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** The index of the first item of a list sorted by `compare` that comes after `position` (binary search). */
export function firstAfter<T, P>(
  list: readonly T[],
  position: P,
  compare: (item: T, position: P) => number,
): number {
  let low = 0;
  let high = list.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (compare(list[middle] as T, position) <= 0) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** Opaque to clients, as MCP's list cursors are. */
export function encodePosition(position: Position): string {
  return Buffer.from(JSON.stringify([position.time, position.id]), "utf8").toString("base64url");
}

/** The position a cursor of `encodePosition` holds; anything else is `InvalidInput`. */
export function decodePosition(cursor: string, isId: (id: string) => boolean): Position {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    value = undefined;
  }
  if (
    !Array.isArray(value) ||
    value.length !== 2 ||
    !isPositionTime(value[0]) ||
    typeof value[1] !== "string" ||
    !isId(value[1])
  ) {
    throw new InvalidInput(
      "That cursor is not one this server gave out: pass the nextCursor of the previous page, or list again without a cursor.",
    );
  }
  return { time: value[0], id: value[1] };
}
