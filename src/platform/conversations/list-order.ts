import { InvalidInput } from "../../errors.ts";
import { type ConversationSummary, isConversationId } from "./model.ts";

/** A place in a list sorted most recently updated first: after this time and id. */
export interface ListPosition {
  updatedAt: string;
  id: string;
}

const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

/** Most recently updated first, ties by id; plain comparison, as ISO times and hex sort by code unit. */
export function compareRecentFirst(a: ListPosition, b: ListPosition): number {
  if (a.updatedAt !== b.updatedAt) return a.updatedAt > b.updatedAt ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** The index of the first entry of a sorted list that comes after `position` (binary search). */
export function firstAfter(list: readonly ListPosition[], position: ListPosition): number {
  let low = 0;
  let high = list.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (compareRecentFirst(list[middle] as ListPosition, position) <= 0) low = middle + 1;
    else high = middle;
  }
  return low;
}

/**
 * The cursor after `summary`: a position, not a reference, so a conversation deleted or moved
 * up by an append between two pages does not break the next one.
 */
export function encodeListCursor(summary: ConversationSummary): string {
  return Buffer.from(JSON.stringify([summary.updatedAt, summary.id]), "utf8").toString("base64url");
}

export function decodeListCursor(cursor: string): ListPosition {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    value = undefined;
  }
  if (
    !Array.isArray(value) ||
    value.length !== 2 ||
    typeof value[0] !== "string" ||
    typeof value[1] !== "string" ||
    !ISO_TIME.test(value[0]) ||
    !isConversationId(value[1])
  ) {
    throw new InvalidInput(
      "That cursor is not one this server gave out: pass the nextCursor of the previous page, or start again without a cursor.",
    );
  }
  return { updatedAt: value[0], id: value[1] };
}

/** A page size from 1 to `max`, `fallback` when not given. */
export function checkLimit(limit: number | undefined, max: number, fallback: number): number {
  if (limit === undefined) return fallback;
  if (!Number.isInteger(limit) || limit < 1 || limit > max) {
    throw new InvalidInput(`limit is a whole number from 1 to ${max}.`);
  }
  return limit;
}
