import { createLogger } from "../../src/log.ts";
import type { ConversationSettings } from "../../src/platform/conversations/config.ts";
import {
  ConversationIndexes,
  type IndexOptions,
} from "../../src/platform/conversations/conversation-indexes.ts";
import type { EventDraft } from "../../src/platform/conversations/model.ts";
import { ConversationStore } from "../../src/platform/conversations/store.ts";
import type { FakeTime } from "./fake-time.ts";
import type { TempRoot } from "./temp-root.ts";

const LIMITS: ConversationSettings = { maxEventBytes: 256 * 1024, maxConversationBytes: 16 * 1024 * 1024 };

/** A conversation store on a temp root, on fake time, whose file references are always the caller's own. */
export function openConversationStore(
  temp: TempRoot,
  time: FakeTime,
  options: { limits?: ConversationSettings; index?: IndexOptions } = {},
): ConversationStore {
  const storage = temp.layout.partition("conversations");
  return new ConversationStore(
    storage,
    options.limits ?? LIMITS,
    new ConversationIndexes(storage, time.timers, createLogger("silent"), time.clock, options.index),
    temp.events,
    time.clock,
    async () => true,
  );
}

/** A person's message of `words`, as a conversation is sent one. */
export function said(words: string): EventDraft {
  return { type: "message", role: "user", content: [{ type: "text", text: words }] };
}
