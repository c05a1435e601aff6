import type { ConfigSection } from "../../instance/schema.ts";

export const MAX_EVENT_BYTES_DEFAULT = 256 * 1024;
export const MAX_CONVERSATION_BYTES_DEFAULT = 16 * 1024 * 1024;

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
      maxConversationBytes: { type: "integer", minimum: 1024 },
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
