import { createHash } from "node:crypto";
import { InvalidInput } from "../../errors.ts";
import { isPositionTime } from "../list-position.ts";
import { tokenize } from "./event-text.ts";
import { MAX_EVENT_SEQ } from "./limits.ts";
import type { ListPosition } from "./list-order.ts";
import { isConversationId } from "./model.ts";
import type { EventPlace } from "./search-answer.ts";

/**
 * Where the next page of a search starts: after a conversation in the order results come (`after`,
 * as list's cursor), among the matches indexed before one event (`below`) when the budget of
 * postings cut an earlier part of the search short, and, on a later page of a part an earlier page
 * of which was cut, back to the oldest event that page reached (`from`; adr/0140). Opaque to
 * clients, as every list cursor is (list-position.ts), and bound to its query's words.
 */
export interface SearchCursor {
  after?: ListPosition;
  below?: EventPlace;
  from?: EventPlace;
  /** The first part's top (SearchPart.top), on its later pages. */
  top?: EventPlace;
}

const NOT_OURS =
  "That cursor is not one this search gave out: pass the nextCursor of the previous page with the same query, or search again without a cursor.";

export function encodeSearchCursor(query: string, cursor: SearchCursor): string {
  const value = {
    q: queryTag(query),
    ...(cursor.after ? { a: [cursor.after.updatedAt, cursor.after.id] } : {}),
    ...(cursor.below ? { b: [cursor.below.id, cursor.below.seq] } : {}),
    ...(cursor.from ? { f: [cursor.from.id, cursor.from.seq] } : {}),
    ...(cursor.top ? { t: [cursor.top.id, cursor.top.seq] } : {}),
  };
  return Buffer.from(JSON.stringify(value), "utf8").toString("base64url");
}

/** The place a cursor of `encodeSearchCursor` for the same words holds; anything else is `InvalidInput`. */
export function decodeSearchCursor(query: string, cursor: string): SearchCursor {
  let value: { q?: unknown; a?: unknown; b?: unknown; f?: unknown; t?: unknown } | undefined;
  try {
    value = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    value = undefined;
  }
  if (typeof value !== "object" || value === null || typeof value.q !== "string")
    throw new InvalidInput(NOT_OURS);
  const after = placeAfter(value.a);
  const below = eventPlace(value.b);
  const from = eventPlace(value.f);
  const top = eventPlace(value.t);
  const malformed =
    (value.a !== undefined && !after) ||
    (value.b !== undefined && !below) ||
    (value.f !== undefined && !from) ||
    (value.t !== undefined && !top);
  // Only a later page of a part (`after`) has a floor, and a top only in the first part (no `below`):
  // a part's first page walks back as far as its budget.
  if (malformed || (!after && !below) || (from && !after) || (top && (!after || below)))
    throw new InvalidInput(NOT_OURS);
  // A cursor of other words would resume their walk, not this one's.
  if (value.q !== queryTag(query)) {
    throw new InvalidInput(
      "That cursor belongs to a search of other words: pass it with the query it came with, or search again without a cursor.",
    );
  }
  return {
    ...(after ? { after } : {}),
    ...(below ? { below } : {}),
    ...(from ? { from } : {}),
    ...(top ? { top } : {}),
  };
}

function placeAfter(value: unknown): ListPosition | undefined {
  if (!isPair(value)) return undefined;
  const [updatedAt, id] = value;
  return isPositionTime(updatedAt) && typeof id === "string" && isConversationId(id)
    ? { updatedAt, id }
    : undefined;
}

function eventPlace(value: unknown): EventPlace | undefined {
  if (!isPair(value)) return undefined;
  const [id, seq] = value;
  const isSeq = typeof seq === "number" && Number.isInteger(seq) && seq >= 1 && seq <= MAX_EVENT_SEQ;
  return typeof id === "string" && isConversationId(id) && isSeq ? { id, seq } : undefined;
}

function isPair(value: unknown): value is [unknown, unknown] {
  return Array.isArray(value) && value.length === 2;
}

/** The query's distinct words, as search reads them, in a few characters: `Invoice march` and `march invoice` share one. */
function queryTag(query: string): string {
  const words = tokenize(query).sort().join(" ");
  return createHash("sha256").update(words).digest("base64url").slice(0, 11);
}
