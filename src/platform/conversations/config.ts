import type { ConfigSection } from "../../instance/schema.ts";

export const MAX_EVENT_BYTES_DEFAULT = 256 * 1024;
export const MAX_CONVERSATION_BYTES_DEFAULT = 16 * 1024 * 1024;
/**
 * The most `maxConversationBytes` may be set to. The search index keeps an event's seq in 21 bits
 * (limits.ts MAX_EVENT_SEQ), and the shortest line an append can write (an empty title: 67 bytes
 * and the seq's digits) makes seqs 1 to 2^21 − 1 take 147 MiB; 128 MiB of such lines reach seq
 * 1.83 million, 13% short of it (adr/0117; test/unit/instance/load.test.ts
 * "conversations.maxConversationBytes keeps up to 128 MiB").
 */
export const MAX_CONVERSATION_BYTES_LIMIT = 128 * 1024 * 1024;

export interface ConversationSettings {
  /** The largest one event may be, as its stored JSON line in UTF-8 bytes. */
  maxEventBytes: number;
  /** The largest one conversation's log may grow to, in bytes; an append past it is refused whole. */
  maxConversationBytes: number;
}

/** instance.json's `conversations` section. */
export const conversationsConfig: ConfigSection<ConversationSettings> = {
  schema: {
    type: "object",
    additionalProperties: false,
    properties: {
      maxEventBytes: { type: "integer", minimum: 1024 },
      maxConversationBytes: { type: "integer", minimum: 1024, maximum: MAX_CONVERSATION_BYTES_LIMIT },
    },
  },
  resolve(section) {
    const file = (section ?? {}) as Partial<ConversationSettings>;
    return {
      maxEventBytes: file.maxEventBytes ?? MAX_EVENT_BYTES_DEFAULT,
      maxConversationBytes: file.maxConversationBytes ?? MAX_CONVERSATION_BYTES_DEFAULT,
    };
  },
};
