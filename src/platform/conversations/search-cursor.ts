import { createHash } from "node:crypto";
import { InvalidInput } from "../../errors.ts";
import { isPositionTime } from "../list-position.ts";
import { isGeneration } from "./event-numbers.ts";
import { tokenize } from "./event-text.ts";
import type { ListPosition } from "./list-order.ts";
import { isConversationId } from "./model.ts";

/**
 * Where the next page of a search starts: the part of the search it is of, the events numbered
 * below `hi` (adr/0144) and, on a later page of a part an earlier page of which was cut, from
 * `lo`, the reach of that page (adr/0140); and, on a later page of a part, after a conversation in
 * the order results come (`after`, as list's cursor). Numbers are of one numbering of the index's
 * events, `generation`: a cursor of another is refused. Opaque to clients, as every list cursor is
 * (list-position.ts), and bound to its query's words.
 */
export interface SearchCursor {
  generation: string;
  hi: number;
  lo?: number;
  after?: ListPosition;
}

const NOT_OURS =
  "That cursor is not one this search gave out: pass the nextCursor of the previous page with the same query, or search again without a cursor.";

export function encodeSearchCursor(query: string, cursor: SearchCursor): string {
  const value = {
    q: queryTag(query),
    g: cursor.generation,
    h: cursor.hi,
    ...(cursor.lo !== undefined ? { l: cursor.lo } : {}),
    ...(cursor.after ? { a: [cursor.after.updatedAt, cursor.after.id] } : {}),
  };
  return Buffer.from(JSON.stringify(value), "utf8").toString("base64url");
}

/** The place a cursor of `encodeSearchCursor` for the same words holds; anything else is `InvalidInput`. */
export function decodeSearchCursor(query: string, cursor: string): SearchCursor {
  let value: { q?: unknown; g?: unknown; h?: unknown; l?: unknown; a?: unknown } | undefined;
  try {
    value = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    value = undefined;
  }
  if (typeof value !== "object" || value === null || typeof value.q !== "string")
    throw new InvalidInput(NOT_OURS);
  const { g: generation, h: hi, l: lo } = value;
  const after = placeAfter(value.a);
  const malformed =
    !isGeneration(generation) ||
    !isNumber(hi) ||
    (lo !== undefined && (!isNumber(lo) || lo >= (hi as number))) ||
    (value.a !== undefined && !after);
  // Only a later page of a part (`after`) has a floor: a part's first page walks back as far as its budget.
  if (malformed || (lo !== undefined && !after)) throw new InvalidInput(NOT_OURS);
  // A cursor of other words would resume their walk, not this one's.
  if (value.q !== queryTag(query)) {
    throw new InvalidInput(
      "That cursor belongs to a search of other words: pass it with the query it came with, or search again without a cursor.",
    );
  }
  return {
    generation: generation as string,
    hi: hi as number,
    ...(lo !== undefined ? { lo: lo as number } : {}),
    ...(after ? { after } : {}),
  };
}

/** An event number: what the index gives every event it indexes, from 0 up. */
function isNumber(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

function placeAfter(value: unknown): ListPosition | undefined {
  if (!isPair(value)) return undefined;
  const [updatedAt, id] = value;
  return isPositionTime(updatedAt) && typeof id === "string" && isConversationId(id)
    ? { updatedAt, id }
    : undefined;
}

function isPair(value: unknown): value is [unknown, unknown] {
  return Array.isArray(value) && value.length === 2;
}

/** The query's distinct words, as search reads them, in a few characters: `Invoice march` and `march invoice` share one. */
function queryTag(query: string): string {
  const words = tokenize(query).sort().join(" ");
  return createHash("sha256").update(words).digest("base64url").slice(0, 11);
}
