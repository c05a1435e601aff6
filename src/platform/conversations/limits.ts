import { AtriumError } from "../../errors.ts";
import type { ConversationSettings } from "./config.ts";

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
