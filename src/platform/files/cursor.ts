import { compareNewestFirst as compareNewest, decodePosition, encodePosition } from "../list-position.ts";
import { type FileMeta, isFileId } from "./model.ts";

/** A place in a listing sorted newest first: after this creation time and id. */
export interface ListPosition {
  createdAt: string;
  id: string;
}

/** Newest first, ties by id: the order of every listing and the order a cursor points into. */
export function compareNewestFirst(a: ListPosition, b: ListPosition): number {
  return compareNewest({ time: a.createdAt, id: a.id }, { time: b.createdAt, id: b.id });
}

/** The cursor after `meta` (list-position.ts): deleting the file it names does not break the next page. */
export function encodeCursor(meta: FileMeta): string {
  return encodePosition({ time: meta.createdAt, id: meta.id });
}

export function decodeCursor(cursor: string): ListPosition {
  const { time, id } = decodePosition(cursor, isFileId);
  return { createdAt: time, id };
}
