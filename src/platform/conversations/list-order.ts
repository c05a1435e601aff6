import { InvalidInput } from "../../errors.ts";
import {
  compareNewestFirst,
  decodePosition,
  encodePosition,
  firstAfter as firstAfterIn,
} from "../list-position.ts";
import { type ConversationSummary, isConversationId } from "./model.ts";

/** A place in a list sorted most recently updated first: after this time and id. */
export interface ListPosition {
  updatedAt: string;
  id: string;
}

/** Most recently updated first, ties by id. */
export function compareRecentFirst(a: ListPosition, b: ListPosition): number {
  return compareNewestFirst({ time: a.updatedAt, id: a.id }, { time: b.updatedAt, id: b.id });
}

/** The index of the first entry of a sorted list that comes after `position`. */
export function firstAfter(list: readonly ListPosition[], position: ListPosition): number {
  return firstAfterIn(list, position, compareRecentFirst);
}

/**
 * The cursor after `summary` (list-position.ts): a conversation deleted, or moved up by an
 * append, between two pages does not break the next one.
 */
export function encodeListCursor(summary: ConversationSummary): string {
  return encodePosition({ time: summary.updatedAt, id: summary.id });
}

export function decodeListCursor(cursor: string): ListPosition {
  const { time, id } = decodePosition(cursor, isConversationId);
  return { updatedAt: time, id };
}

/** A page size from 1 to `max`, `fallback` when not given. */
export function checkLimit(limit: number | undefined, max: number, fallback: number): number {
  if (limit === undefined) return fallback;
  if (!Number.isInteger(limit) || limit < 1 || limit > max) {
    throw new InvalidInput(`limit is a whole number from 1 to ${max}.`);
  }
  return limit;
}
