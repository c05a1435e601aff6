import { expect } from "vitest";
import { createLogger } from "../../src/log.ts";
import type { ConversationSettings } from "../../src/platform/conversations/config.ts";
import {
  ConversationIndexes,
  type IndexOptions,
} from "../../src/platform/conversations/conversation-indexes.ts";
import { searchConversations } from "../../src/platform/conversations/finder.ts";
import type { EventDraft } from "../../src/platform/conversations/model.ts";
import { ConversationStore } from "../../src/platform/conversations/store.ts";
import { NO_CALLER } from "../../src/workspace/access-check.ts";
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

/**
 * Runs `work` on a store opened as openConversationStore opens it, and stops its indexes after,
 * whatever `work` did: a process that stops gracefully. A test of a crash leaves its first store
 * unstopped instead.
 */
export async function withConversationStore<T>(
  temp: TempRoot,
  time: FakeTime,
  options: { limits?: ConversationSettings; index?: IndexOptions },
  work: (store: ConversationStore) => Promise<T>,
): Promise<T> {
  const store = openConversationStore(temp, time, options);
  try {
    return await work(store);
  } finally {
    await store.indexes.stop();
  }
}

/** Past the idle time (CONVERSATION_INDEX_IDLE_MS) with a minute to spare. */
const IDLE_DROP_MS = 11 * 60 * 1000;

/** Saves and drops every partition of the store as the idle sweep does: none is left in memory. */
export async function dropIdle(store: ConversationStore, time: FakeTime): Promise<void> {
  await store.indexes.sweep(time.clock() + IDLE_DROP_MS);
  expect(store.indexes.loadedPartitions).toBe(0);
}

/**
 * A is saved, B made (numbered) and a cursor given over both, then B deleted: a snapshot written
 * before B is behind numbers the cursor walks, though no log is (adr/0144). Gives the cursor.
 */
export async function cursorOverDeleted(
  store: ConversationStore,
  temp: TempRoot,
  time: FakeTime,
  ownerId: string,
): Promise<string> {
  await store.create(temp.ws, ownerId, "A", [said("apple one")], NO_CALLER);
  time.jump(1000);
  await store.indexes.flush();
  const b = await store.create(temp.ws, ownerId, "B", [said("apple two"), said("apple three")], NO_CALLER);
  time.jump(1000);
  const first = await searchConversations(store.indexes, store, temp.ws, ownerId, {
    query: "apple",
    limit: 1,
  });
  expect(first.nextCursor).toBeDefined();
  await store.delete(temp.ws, ownerId, b.id, NO_CALLER);
  return first.nextCursor ?? "";
}

/**
 * After cursorOverDeleted: loads the partition reading no log, makes C, and pages on from
 * `cursor`, which must be refused, saying `why`. Kept, the generation would let C take B's
 * numbers, and the cursor would answer C, made after it.
 */
export async function expectRefusedAfterC(
  store: ConversationStore,
  temp: TempRoot,
  time: FakeTime,
  ownerId: string,
  cursor: string,
  why: string | RegExp,
): Promise<void> {
  const probe = await searchConversations(store.indexes, store, temp.ws, ownerId, { query: "pear" });
  expect(probe.index.logsRead).toBe(0);
  time.jump(1000);
  await store.create(temp.ws, ownerId, "C", [said("apple later")], NO_CALLER);
  await expect(
    searchConversations(store.indexes, store, temp.ws, ownerId, { query: "apple", limit: 1, cursor }),
  ).rejects.toThrow(why);
}

/**
 * Ten postings of "apple" left above the others in the lists by a conversation, X, made and deleted
 * at once: kept there until a compaction, they cost a search's budget and match nothing.
 */
export async function removedApplePostings(
  store: ConversationStore,
  temp: TempRoot,
  ownerId: string,
): Promise<void> {
  const x = await store.create(
    temp.ws,
    ownerId,
    "X",
    Array.from({ length: 10 }, (_, i) => said(`apple ${i}`)),
    NO_CALLER,
  );
  await store.delete(temp.ws, ownerId, x.id, NO_CALLER);
}

/** A person's message of `words`, as a conversation is sent one. */
export function said(words: string): EventDraft {
  return { type: "message", role: "user", content: [{ type: "text", text: words }] };
}
