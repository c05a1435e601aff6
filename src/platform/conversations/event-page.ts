import { InvalidInput } from "../../errors.ts";
import { checkLimit } from "./list-order.ts";
import type { ConversationEvent } from "./model.ts";

export const DEFAULT_EVENT_PAGE = 100;
export const MAX_EVENT_PAGE = 1000;
export const EVENT_ORDERS = ["oldest", "newest"] as const;
export type EventOrder = (typeof EVENT_ORDERS)[number];

export interface EventPageRequest {
  cursor?: string | undefined;
  limit?: number | undefined;
  order?: EventOrder | undefined;
}

/** A page request with its limit checked and its cursor read: `after` is the seq it names. */
export interface EventPageQuery {
  limit: number;
  order: EventOrder;
  after: number | undefined;
}

/** Some of a log's events in log order, whole groups: `first` of its `count` events come before them. */
export interface EventSpan {
  events: readonly ConversationEvent[];
  first: number;
  count: number;
}

export interface EventPage {
  events: ConversationEvent[];
  nextCursor?: string;
}

/**
 * One page of a log's events in seq order, oldest or newest first. The cursor names the
 * conversation, the order and the last seq given, so a page after an append still follows on
 * from the one before, and another conversation's cursor is refused rather than read as a seq.
 */
export function pageEvents(
  conversationId: string,
  events: readonly ConversationEvent[],
  request: EventPageRequest,
): EventPage {
  return pageSpan(conversationId, wholeLog(events), readPageRequest(conversationId, request));
}

/** The span that is every event of the log. */
export function wholeLog(events: readonly ConversationEvent[]): EventSpan {
  return { events, first: 0, count: events.length };
}

/** The request's limit and cursor, or the InvalidInput that says what is wrong with them. */
export function readPageRequest(conversationId: string, request: EventPageRequest): EventPageQuery {
  const limit = checkLimit(request.limit, MAX_EVENT_PAGE, DEFAULT_EVENT_PAGE);
  const order = request.order ?? "oldest";
  const after =
    request.cursor === undefined ? undefined : decodeEventCursor(request.cursor, conversationId, order);
  return { limit, order, after };
}

/**
 * The page `pageEvents` gives of the whole log, from a span of the log that holds the page: all its
 * events, and none before the span (in the order asked) that the cursor would start it at. What
 * lies outside the span is known only by `first` and `count` (seq-offsets.ts says which span to read).
 */
export function pageSpan(conversationId: string, span: EventSpan, query: EventPageQuery): EventPage {
  const { limit, order, after } = query;
  const sorted = order === "oldest" ? span.events : [...span.events].reverse();
  /** Events of the whole log that come before `sorted` in this order. */
  const before = order === "oldest" ? span.first : span.count - span.first - span.events.length;
  const start =
    after === undefined
      ? 0
      : sorted.findIndex((event) => (order === "oldest" ? event.seq > after : event.seq < after));
  if (start < 0) return { events: [] };
  const page = sorted.slice(start, start + limit);
  const last = page[page.length - 1];
  return before + start + limit < span.count && last
    ? {
        events: page,
        nextCursor: Buffer.from(`${conversationId}.${order}.${last.seq}`).toString("base64url"),
      }
    : { events: page };
}

function decodeEventCursor(cursor: string, conversationId: string, order: EventOrder): number {
  const match = /^(cv_[0-9a-f]{24})\.(oldest|newest)\.([1-9][0-9]{0,14})$/.exec(
    Buffer.from(cursor, "base64url").toString("utf8"),
  );
  if (!match || match[1] !== conversationId || match[2] !== order) {
    throw new InvalidInput(
      "That cursor is not one this server gave out for this conversation and order: pass the nextCursor of the previous page of the same conversation, with the same order.",
    );
  }
  return Number(match[3]);
}
