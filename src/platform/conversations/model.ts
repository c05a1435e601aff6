import { randomBytes } from "node:crypto";
import * as z from "zod";
import type { ConversationInfo } from "../../kernel/events.ts";
import { hasLoneSurrogate } from "../../text.ts";
import { boundedArray } from "../platform-tool.ts";

const CONVERSATION_ID = /^cv_[0-9a-f]{24}$/;
/** A conversation's log: `<ws>/conversations/<owner>/cv_<24 hex>.jsonl`. */
export const LOG_SUFFIX = ".jsonl";
export const MAX_TITLE_CHARS = 200;
/** Events one append may carry; a longer transcript is appended in several calls. */
export const MAX_EVENTS_PER_APPEND = 1000;
/** Blocks one message's content may hold. */
export const MAX_CONTENT_BLOCKS = 1000;

export function newConversationId(): string {
  return `cv_${randomBytes(12).toString("hex")}`;
}

export function isConversationId(value: string): boolean {
  return CONVERSATION_ID.test(value);
}

/** The conversation id a log file's name holds, or undefined for any other entry. */
export function conversationIdOfFile(name: string): string | undefined {
  if (!name.endsWith(LOG_SUFFIX)) return undefined;
  const id = name.slice(0, -LOG_SUFFIX.length);
  return isConversationId(id) ? id : undefined;
}

const title = z
  .string()
  .max(MAX_TITLE_CHARS)
  .regex(/^[^\p{Cc}]*$/u, "A title has no control characters")
  .refine((text) => !hasLoneSurrogate(text), "A title is whole Unicode text (no half of a surrogate pair)")
  .describe(`A title, up to ${MAX_TITLE_CHARS} characters.`);

/** One block of a message's content. */
export const contentBlock = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text"), text: z.string() }).strict(),
  z
    .object({
      type: z.literal("file"),
      fileId: z.string().regex(/^fl_[0-9a-f]{24}$/, "A file reference is fl_ followed by 24 hex digits"),
    })
    .strict()
    .describe("A reference to one of your files in this workspace, by id."),
  z
    .object({
      type: z.literal("tool_call"),
      id: z.string().min(1).max(200),
      name: z.string().min(1).max(200),
      arguments: z.record(z.string(), z.unknown()).optional(),
    })
    .strict(),
  z
    .object({
      type: z.literal("tool_result"),
      toolCallId: z.string().min(1).max(200),
      content: z.string(),
      isError: z.boolean().optional(),
    })
    .strict(),
]);

export type ContentBlock = z.infer<typeof contentBlock>;
export const ROLES = ["user", "assistant", "system", "tool"] as const;
export type Role = (typeof ROLES)[number];

/** What a caller appends: a message or a title change. A fork origin is written only by a fork. */
export const eventDraft = z.discriminatedUnion("type", [
  z
    .object({
      type: z.literal("message"),
      role: z.enum(ROLES),
      // Bounded lists are refused by their length before any item is read (adr/0157).
      content: boundedArray(contentBlock, MAX_CONTENT_BLOCKS, 1),
    })
    .strict(),
  z.object({ type: z.literal("title"), title }).strict(),
]);

export type EventDraft = z.infer<typeof eventDraft>;
export const eventDrafts = boundedArray(eventDraft, MAX_EVENTS_PER_APPEND, 1);
export const titleInput = title;

/** Where a fork came from: the conversation and the last event of the prefix it kept. */
export interface ForkOrigin {
  conversationId: string;
  seq: number;
}

interface Stamped {
  /** 1, 2, 3, … in the order the events were appended. */
  seq: number;
  /** ISO time the event was appended (a fork's copies keep the source's). */
  at: string;
}

/** One line of a conversation's log. */
export type ConversationEvent = Stamped &
  (
    | { type: "message"; role: Role; content: ContentBlock[] }
    | { type: "title"; title: string }
    | { type: "fork"; from: ForkOrigin }
  );

/** What list, search and the events say of a conversation (the event stream's shape, kernel/events.ts). */
export type ConversationSummary = ConversationInfo;

/** The summary of a log's events, oldest first; the events of a fork begin with its prefix. */
export function summarize(id: string, events: readonly ConversationEvent[]): ConversationSummary {
  const summary: ConversationSummary = {
    id,
    title: "",
    messageCount: 0,
    eventCount: 0,
    createdAt: "",
    updatedAt: "",
  };
  for (const event of events) foldEvent(summary, event);
  return summary;
}

/** Moves a summary on by one event, in log order. */
export function foldEvent(summary: ConversationSummary, event: ConversationEvent): void {
  // The first event is when the log began, also when folded into the head of a log an operator
  // emptied: a head says what summarize over its log says (operator-edit.test.ts "emptied").
  if (summary.eventCount === 0) {
    summary.createdAt = event.at;
    summary.updatedAt = event.at;
  }
  summary.eventCount = event.seq;
  if (event.at > summary.updatedAt) summary.updatedAt = event.at;
  if (event.type === "message") summary.messageCount += 1;
  else if (event.type === "title") summary.title = event.title;
  else {
    // A fork is created when its origin is written; the copies before it keep older times.
    summary.forkOf = event.from;
    summary.createdAt = event.at;
    summary.updatedAt = event.at;
  }
}

/**
 * A stored line's event, or undefined for a torn or foreign line (never trusted as whole): a
 * line is an event only if it has every field list, search and export read, of the types they
 * read them as. An operator's hand edit or a damaged line is skipped, never thrown on.
 */
export function parseEventLine(line: string): ConversationEvent | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  return isStoredEvent(value) ? value : undefined;
}

function isStoredEvent(value: unknown): value is ConversationEvent {
  if (!isRecord(value)) return false;
  if (!Number.isSafeInteger(value.seq) || (value.seq as number) < 1 || typeof value.at !== "string")
    return false;
  switch (value.type) {
    case "message":
      return (
        ROLES.includes(value.role as Role) &&
        Array.isArray(value.content) &&
        value.content.every(isStoredBlock)
      );
    case "title":
      return typeof value.title === "string";
    case "fork":
      return (
        isRecord(value.from) &&
        typeof value.from.conversationId === "string" &&
        Number.isSafeInteger(value.from.seq)
      );
    default:
      return false;
  }
}

function isStoredBlock(block: unknown): boolean {
  if (!isRecord(block)) return false;
  switch (block.type) {
    case "text":
      return typeof block.text === "string";
    case "file":
      return typeof block.fileId === "string";
    case "tool_call":
      return (
        typeof block.id === "string" &&
        typeof block.name === "string" &&
        (block.arguments === undefined || isRecord(block.arguments))
      );
    case "tool_result":
      return (
        typeof block.toolCallId === "string" &&
        typeof block.content === "string" &&
        (block.isError === undefined || typeof block.isError === "boolean")
      );
    default:
      return false;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
