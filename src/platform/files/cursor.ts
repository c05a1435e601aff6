import { InvalidInput } from "../../errors.ts";
import { type FileMeta, isFileId } from "./model.ts";

/** A place in a listing sorted newest first: after this creation time and id. */
export interface ListPosition {
  createdAt: string;
  id: string;
}

const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

/**
 * Newest first, ties by id: the order of every listing and the order a cursor points into.
 * Plain comparison, not localeCompare: ISO times and hex ids sort by code unit.
 */
export function compareNewestFirst(a: ListPosition, b: ListPosition): number {
  if (a.createdAt !== b.createdAt) return a.createdAt > b.createdAt ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/**
 * The cursor after `meta`. Opaque to clients (as MCP's list cursors are), and a position
 * rather than a reference, so deleting the file it names does not break the next page.
 */
export function encodeCursor(meta: FileMeta): string {
  return Buffer.from(JSON.stringify([meta.createdAt, meta.id]), "utf8").toString("base64url");
}

export function decodeCursor(cursor: string): ListPosition {
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
    !isFileId(value[1])
  ) {
    throw new InvalidInput(
      "That cursor is not one this server gave out: pass the nextCursor of the previous page, or list again without a cursor.",
    );
  }
  return { createdAt: value[0], id: value[1] };
}
