import { AtriumError } from "../../errors.ts";
import type { ConversationSettings } from "./config.ts";
import type { ConversationEvent } from "./model.ts";

/**
 * The highest seq an event may be written with: the search index packs a conversation and a seq
 * into one number with 21 bits for the seq (partition-index.ts), so a higher one would be counted
 * as another conversation's event. `maxConversationBytes` at its most keeps appends below it; a
 * log an operator edited (lines removed, seqs kept) may still come near it (adr/0117).
 */
export const MAX_EVENT_SEQ = 2 ** 21 - 1;

/** One event is over `conversations.maxEventBytes`: nothing of its append was written. */
export class EventTooLarge extends AtriumError {
  constructor(index: number, bytes: number, limit: number) {
    super(
      "event_too_large",
      413,
      `Event ${index} is ${bytes} bytes; one event may be at most ${limit} bytes (conversations.maxEventBytes). ` +
        "Nothing was written: split it into smaller events, or store large content as a file and reference it.",
    );
  }
}

/** The append would take the log over `conversations.maxConversationBytes`: nothing was written. */
export class ConversationTooLarge extends AtriumError {
  constructor(bytes: number, limit: number) {
    super(
      "conversation_too_large",
      413,
      `This would make the conversation ${bytes} bytes; one conversation may be at most ${limit} bytes ` +
        "(conversations.maxConversationBytes). Nothing was written: fork a shorter prefix or start a new conversation.",
    );
  }
}

/** The write would number an event past MAX_EVENT_SEQ: nothing was written. */
export class TooManyEvents extends AtriumError {
  constructor(seq: number) {
    super(
      "conversation_too_large",
      413,
      `This would number an event of the conversation ${seq}; one conversation's events are numbered up to ${MAX_EVENT_SEQ}. ` +
        "Nothing was written: fork a shorter prefix or start a new conversation.",
    );
  }
}

/**
 * Refuses a write whose last event, the highest numbered, is past MAX_EVENT_SEQ
 * (operator-edit.test.ts "an append that would number an event past 2^21 − 1").
 */
export function checkSeqs(events: readonly ConversationEvent[]): void {
  const last = events[events.length - 1]?.seq;
  if (last !== undefined && last > MAX_EVENT_SEQ) throw new TooManyEvents(last);
}

/**
 * Checks the lines of one write against both limits before any byte of it is written, and
 * returns them as one buffer. `logBytes` is the size of the log they are appended to.
 */
export function checkedWrite(
  lines: readonly Buffer[],
  logBytes: number,
  limits: ConversationSettings,
): Buffer {
  let total = logBytes;
  lines.forEach((line, index) => {
    if (line.length > limits.maxEventBytes) throw new EventTooLarge(index, line.length, limits.maxEventBytes);
    total += line.length;
  });
  if (total > limits.maxConversationBytes) throw new ConversationTooLarge(total, limits.maxConversationBytes);
  return Buffer.concat(lines);
}
