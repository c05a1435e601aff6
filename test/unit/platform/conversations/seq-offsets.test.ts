import { appendFile, open, readFile, rename, stat, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  type EventOrder,
  type EventPageRequest,
  pageEvents,
} from "../../../../src/platform/conversations/event-page.ts";
import { searchConversations } from "../../../../src/platform/conversations/finder.ts";
import { appendLines, readLog } from "../../../../src/platform/conversations/log-file.ts";
import {
  type ConversationEvent,
  type EventDraft,
  summarize,
} from "../../../../src/platform/conversations/model.ts";
import {
  CHECKPOINT_BYTES,
  CHECKPOINT_EVENTS,
  SeqOffsets,
} from "../../../../src/platform/conversations/seq-offsets.ts";
import type { ConversationStore } from "../../../../src/platform/conversations/store.ts";
import type { KeyedLock } from "../../../../src/storage/keyed-lock.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { openConversationStore } from "../../../helpers/conversation-store.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { gate } from "../../../helpers/gate.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// A page of a conversation is read from the bytes that hold it, found through the log's seq
// offsets (adr/0096); every page must be the one the whole-log read gave: `pageEvents` over
// `readLog` of the same file, with the summary of every event.
const ALICE = `usr_${"a".repeat(24)}`;
const AT = "2026-01-01T00:00:00.000Z";

let temp: TempRoot;
let time: FakeTime;

function openStore(): ConversationStore {
  return openConversationStore(temp, time);
}

/** A message draft whose text says its number, padded so a log of thousands spans many checkpoints. */
function message(n: number, pad = 900): EventDraft {
  return { type: "message", role: "user", content: [{ type: "text", text: `m${n} ${"x".repeat(pad)}` }] };
}

const line = (value: object) => `${JSON.stringify(value)}\n`;

function event(seq: number, text = `e${seq}`): ConversationEvent {
  return { seq, at: AT, type: "message", role: "user", content: [{ type: "text", text }] };
}

const cursor = (id: string, order: EventOrder, seq: number) =>
  Buffer.from(`${id}.${order}.${seq}`).toString("base64url");

/** What a call answers, or the code (or message) of what it threw. */
async function answer<T>(call: () => Promise<T>): Promise<T | { threw: string }> {
  try {
    return await call();
  } catch (error) {
    const { code, message: text } = error as { code?: string; message: string };
    return { threw: code ?? text };
  }
}

/** A conversation the store holds, and its log. */
interface Log {
  store: ConversationStore;
  id: string;
  path: string;
}

function logPath(id: string): string {
  return join(temp.layout.partition("conversations").ownerDir(temp.ws, ALICE), `${id}.jsonl`);
}

/** Thousands of events by hundreds of appends, most of them groups of several events. */
async function appendedLog(appends: number): Promise<Log> {
  const store = openStore();
  const { id } = await store.create(temp.ws, ALICE, "long", undefined, NO_CALLER);
  let n = 0;
  for (let i = 0; i < appends; i++) {
    time.jump(1000);
    const drafts = Array.from({ length: (i * 7) % 13 === 0 ? 1 : 1 + ((i * 5) % 12) }, () => message(n++));
    await store.append(temp.ws, ALICE, id, drafts, NO_CALLER);
  }
  return { store, id, path: logPath(id) };
}

/** The page the whole-log read gives, read from the file as it is now. */
async function wholeReadPage(log: Log, request: EventPageRequest) {
  return answer(async () => {
    const { events } = await readLog(log.path);
    return { conversation: summarize(log.id, events), ...pageEvents(log.id, events, request) };
  });
}

async function expectSamePage(log: Log, request: EventPageRequest): Promise<void> {
  const got = await answer(() => log.store.get(temp.ws, ALICE, log.id, request));
  expect(got, JSON.stringify(request)).toEqual(await wholeReadPage(log, request));
}

/** Every page of the log in `order` at `limit`, each compared with the whole read's (read once). */
async function expectSameWalk(log: Log, order: EventOrder, limit: number): Promise<void> {
  const { events } = await readLog(log.path);
  const conversation = summarize(log.id, events);
  let cursorNow: string | undefined;
  do {
    const request = { order, limit, cursor: cursorNow };
    const got = await log.store.get(temp.ws, ALICE, log.id, request);
    expect(got, JSON.stringify(request)).toEqual({ conversation, ...pageEvents(log.id, events, request) });
    cursorNow = got.nextCursor;
  } while (cursorNow);
}

/** Cursors at every `stride`-th seq from 1 to past the last, and the limits around the checkpoints. */
async function expectSameAtCursors(log: Log, stride: number, limits: number[]): Promise<void> {
  const { events } = await readLog(log.path);
  const conversation = summarize(log.id, events);
  const last = events[events.length - 1]?.seq ?? 0;
  for (const order of ["oldest", "newest"] as const) {
    for (let seq = 1; seq <= last + 2; seq += stride) {
      for (const limit of limits) {
        const request = { order, limit, cursor: cursor(log.id, order, seq) };
        expect(await log.store.get(temp.ws, ALICE, log.id, request), JSON.stringify(request)).toEqual({
          conversation,
          ...pageEvents(log.id, events, request),
        });
      }
    }
  }
}

beforeEach(async () => {
  temp = await openTempRoot("conversation-pages", ALICE);
  time = new FakeTime();
});

afterEach(async () => {
  vi.restoreAllMocks();
  await temp.remove();
});

describe("a page of a conversation built by many appends", () => {
  it("is the page the whole-log read gives, in both orders, at every limit, from any cursor", async () => {
    const log = await appendedLog(500);
    const { events } = await readLog(log.path);
    expect(events.length).toBeGreaterThan(3000);
    const limits = [7, CHECKPOINT_EVENTS - 1, CHECKPOINT_EVENTS, CHECKPOINT_EVENTS + 1, 100, 1000];
    for (const order of ["oldest", "newest"] as const) {
      for (const limit of limits) await expectSameWalk(log, order, limit);
    }
    await expectSameAtCursors(log, 29, [1, 2, CHECKPOINT_EVENTS + 1, 1000]);
    // The limit's edges: the whole log in one page or one event short of it, and refused limits.
    for (const limit of [events.length - 1, events.length, events.length + 1, 0, 1001, 2.5]) {
      await expectSamePage(log, { order: "newest", limit: Math.min(limit, 1000) });
      await expectSamePage(log, { order: "oldest", limit });
    }
    // Refused cursors: another order's, another conversation's, and one that is no cursor.
    await expectSamePage(log, { order: "newest", cursor: cursor(log.id, "oldest", 5) });
    await expectSamePage(log, { cursor: cursor(`cv_${"0".repeat(24)}`, "oldest", 5) });
    await expectSamePage(log, { cursor: "bm9wZQ" });
  }, 60_000);

  it("follows on with the events appended after a page was read", async () => {
    const log = await appendedLog(40);
    const first = await log.store.get(temp.ws, ALICE, log.id, { limit: 100 });
    await log.store.append(temp.ws, ALICE, log.id, [message(-1), message(-2), message(-3)], NO_CALLER);
    await log.store.append(temp.ws, ALICE, log.id, [message(-4)], NO_CALLER);
    const newest = await log.store.get(temp.ws, ALICE, log.id, { order: "newest", limit: 4 });
    expect(newest.events.map((e) => e.seq)).toEqual(
      [4, 3, 2, 1].map((k) => first.conversation.eventCount + k),
    );
    expect(first.nextCursor).toBeDefined();
    await expectSamePage(log, { cursor: first.nextCursor, limit: 1000 });
    for (const order of ["oldest", "newest"] as const) await expectSameWalk(log, order, 9);
  });

  it("never shows part of an append of many events, whenever it is read during the append", async () => {
    const log = await appendedLog(20);
    const before = (await log.store.get(temp.ws, ALICE, log.id)).conversation.eventCount;
    let done = false;
    const drafts = Array.from({ length: 1000 }, (_, i) => message(i, 2000));
    const appending = log.store.append(temp.ws, ALICE, log.id, drafts, NO_CALLER).finally(() => {
      done = true;
    });
    const pages = [];
    while (!done) pages.push(await log.store.get(temp.ws, ALICE, log.id, { order: "newest", limit: 1000 }));
    await appending;
    pages.push(await log.store.get(temp.ws, ALICE, log.id, { order: "newest", limit: 1000 }));
    for (const page of pages) {
      const added = page.events.filter((e) => e.seq > before).length;
      expect([0, 1000]).toContain(added);
      expect(page.events[0]?.seq).toBe(page.conversation.eventCount);
    }
    expect(pages[pages.length - 1]?.events[0]?.seq).toBe(before + 1000);
  });
});

describe("a page of a log changed on disk after its offsets were read", () => {
  async function readLogWithHead(): Promise<Log> {
    const log = await appendedLog(120);
    await log.store.get(temp.ws, ALICE, log.id, { order: "newest" });
    return log;
  }

  async function expectSamePages(log: Log): Promise<void> {
    await expectSamePage(log, { order: "newest" });
    await expectSamePage(log, { order: "newest", limit: 3 });
    await expectSameAtCursors(log, 37, [5, 100]);
  }

  it("shows a line an operator appended by hand", async () => {
    const log = await readLogWithHead();
    const { events } = await readLog(log.path);
    const next = (events[events.length - 1]?.seq ?? 0) + 1;
    await appendFile(log.path, line(event(next, "by hand")));
    const page = await log.store.get(temp.ws, ALICE, log.id, { order: "newest", limit: 1 });
    expect(page.events).toEqual([event(next, "by hand")]);
    await expectSamePages(log);
  });

  it("is read from what is left of a log cut short, between lines or in the middle of one", async () => {
    const log = await readLogWithHead();
    const { size } = await stat(log.path);
    await truncate(log.path, Math.floor(size / 2));
    await expectSamePages(log);
    const text = await readFile(log.path, "utf8");
    await truncate(log.path, Buffer.byteLength(text.slice(0, text.lastIndexOf("\n", text.length / 2) + 1)));
    await expectSamePages(log);
  });

  it("is read from a replacement of the same size whose lines start at other bytes", async () => {
    const log = await readLogWithHead();
    const lines = (await readFile(log.path, "utf8")).split("\n").filter(Boolean);
    // The third line moved to the end: the same bytes in all, every later line shifted.
    const moved = [...lines.slice(0, 2), ...lines.slice(3), lines[2]];
    const replacement = `${log.path}.new`;
    await writeFile(replacement, `${moved.join("\n")}\n`);
    expect((await stat(replacement)).size).toBe((await stat(log.path)).size);
    await rename(replacement, log.path);
    await expectSamePages(log);
  });

  it("never shows a torn line or an append a crash cut short, and the next append cuts them off", async () => {
    const log = await readLogWithHead();
    const { events } = await readLog(log.path);
    const next = (events[events.length - 1]?.seq ?? 0) + 1;
    const group = appendLines([event(next), event(next + 1), event(next + 2)]);
    await appendFile(log.path, Buffer.concat([group[0] as Buffer, group[1] as Buffer]));
    await appendFile(log.path, (group[2] as Buffer).subarray(0, 20));
    const newest = await log.store.get(temp.ws, ALICE, log.id, { order: "newest", limit: 1 });
    expect(newest.events[0]?.seq).toBe(next - 1);
    await expectSamePages(log);
    await log.store.append(temp.ws, ALICE, log.id, [message(-1)], NO_CALLER);
    const after = await log.store.get(temp.ws, ALICE, log.id, { order: "newest", limit: 2 });
    expect(after.events.map((e) => e.seq)).toEqual([next, next - 1]);
    await expectSamePages(log);
  });

  it("of a log emptied by hand and appended to again, has the summary the log's events give", async () => {
    const log = await readLogWithHead();
    await truncate(log.path, 0);
    await log.store.append(temp.ws, ALICE, log.id, [message(1)], NO_CALLER);
    await expectSamePage(log, { order: "newest" });
  });
});

describe("a page of a log that is not only appends", () => {
  /** A log written by hand: groups of one and several, cut-short groups, lines that are no event, seq gaps. */
  async function handWrittenLog(): Promise<Log> {
    const store = openStore();
    const { id } = await store.create(temp.ws, ALICE, "by hand", undefined, NO_CALLER);
    const path = logPath(id);
    const parts: string[] = [];
    let seq = 2;
    for (let i = 0; parts.length < 3000; i++) {
      if (i % 17 === 5) parts.push("not json\n", line({ seq: 0 }), line({ seq, at: AT, type: "note" }));
      if (i % 23 === 11) {
        // A group a crash cut short, left in the middle by a hand edit: never seen.
        const cut = appendLines([event(seq), event(seq + 1), event(seq + 2)]);
        parts.push((cut[0] as Buffer).toString("utf8"), (cut[1] as Buffer).toString("utf8"));
        seq += 3;
      }
      if (i % 31 === 3) seq += 5;
      const size = 1 + (i % 6);
      const group = appendLines(Array.from({ length: size }, (_, k) => event(seq + k, "y".repeat(600))));
      for (const bytes of group) parts.push(bytes.toString("utf8"));
      if (size > 1 && i % 19 === 7) parts.splice(parts.length - 1, 0, "not an event, inside a group\n");
      seq += size;
    }
    await appendFile(path, parts.join(""));
    return { store, id, path };
  }

  it("skips what the whole read skips, from any cursor", async () => {
    const log = await handWrittenLog();
    await expectSameWalk(log, "newest", CHECKPOINT_EVENTS + 1);
    await expectSameWalk(log, "oldest", 100);
    await expectSameAtCursors(log, 13, [1, 100]);
  }, 30_000);

  it("whose seqs an operator put out of order is read whole, with the same pages", async () => {
    const log = await handWrittenLog();
    await log.store.get(temp.ws, ALICE, log.id);
    await appendFile(log.path, line(event(40, "out of order")));
    // No walk: with seqs out of order, a cursor can lead back to an earlier page (as it always has).
    await expectSamePage(log, { order: "newest" });
    await expectSamePage(log, { order: "oldest" });
    await expectSameAtCursors(log, 211, [1, 100]);
  }, 30_000);

  it("of a fork is its own log's page, and the source's pages are unchanged", async () => {
    const source = await appendedLog(200);
    const { events } = await readLog(source.path);
    const throughSeq = (events[Math.floor(events.length / 2)] as ConversationEvent).seq;
    const fork = await source.store.fork(
      temp.ws,
      ALICE,
      source.id,
      { throughSeq, title: "the fork" },
      NO_CALLER,
    );
    const forked = { store: source.store, id: fork.id, path: logPath(fork.id) };
    await expectSameWalk(forked, "newest", 100);
    await expectSameWalk(forked, "oldest", CHECKPOINT_EVENTS);
    // Every cursor: a page that ends just before a checkpoint needs that checkpoint's offset exact.
    await expectSameAtCursors(forked, 1, [3]);
    await source.store.append(temp.ws, ALICE, fork.id, [message(-1)], NO_CALLER);
    await expectSameAtCursors(forked, 41, [100]);
    await expectSameWalk(source, "newest", 100);
  }, 30_000);
});

describe("the bytes a page reads", () => {
  /** The bytes every file read asks for while `work` runs (a throw leaves the spy to afterEach). */
  async function bytesRead(work: () => Promise<unknown>): Promise<number> {
    const probe = await open(join(temp.root, "probe"), "w");
    const read = vi.spyOn(Object.getPrototypeOf(probe) as { read: (...args: unknown[]) => unknown }, "read");
    await probe.close();
    await work();
    const bytes = read.mock.calls.reduce((sum, args) => sum + Number(args[2] ?? 0), 0);
    read.mockRestore();
    return bytes;
  }

  it("are those of the page, not of the log, once its head is read", async () => {
    const store = openStore();
    const { id } = await store.create(temp.ws, ALICE, "large", undefined, NO_CALLER);
    const path = logPath(id);
    const groups: Buffer[] = [];
    for (let seq = 2; seq < 8000; seq += 4) {
      groups.push(...appendLines([0, 1, 2, 3].map((k) => event(seq + k, "z".repeat(600)))));
    }
    await appendFile(path, Buffer.concat(groups));
    const log = { store, id, path };
    const { size } = await stat(path);
    expect(size).toBeGreaterThan(4 * 1024 * 1024);
    // The first read of a log reads it whole, for its head (adr/0119), then the page from it.
    const first = await bytesRead(() => store.get(temp.ws, ALICE, id, { order: "newest" }));
    expect(first).toBeGreaterThanOrEqual(size);
    expect(first - size).toBeLessThan(256 * 1024);
    for (const request of [
      { order: "newest" as const },
      { order: "newest" as const, cursor: cursor(id, "newest", 4000) },
      { order: "oldest" as const },
      { order: "oldest" as const, cursor: cursor(id, "oldest", 4000) },
    ]) {
      const read = await bytesRead(() => expectSamePage(log, request));
      // The page and the whole read it is compared with: the page itself is a few hundred KiB.
      expect(read - size, JSON.stringify(request)).toBeLessThan(256 * 1024);
    }
  });

  it("of a search hit are those of the groups holding its events, not of its whole log", async () => {
    // Each hit read its whole log (up to maxConversationBytes) to show at most five events (adr/0118).
    const { id } = await openStore().create(temp.ws, ALICE, "large", undefined, NO_CALLER);
    const path = logPath(id);
    const groups: Buffer[] = [];
    for (let seq = 2; seq < 8000; seq += 4) {
      const texts = [0, 1, 2, 3].map((k) => ((seq + k) % 997 === 0 ? "zebra" : "z".repeat(600)));
      groups.push(...appendLines(texts.map((text, k) => event(seq + k, text))));
    }
    await appendFile(path, Buffer.concat(groups));
    const { size } = await stat(path);
    expect(size).toBeGreaterThan(4 * 1024 * 1024);
    const store = openStore(); // as after a restart: its index reads the log
    const search = () => searchConversations(store.indexes, store, temp.ws, ALICE, { query: "zebra" });
    await search(); // The index and the head read the log whole, once each.
    let found: Awaited<ReturnType<typeof search>> | undefined;
    const read = await bytesRead(async () => {
      found = await search();
    });
    expect(read).toBeLessThan(5 * 256 * 1024);
    const whole = (await readLog(path)).events;
    const zebras = whole.filter(
      (e) => e.type === "message" && e.content[0]?.type === "text" && e.content[0].text === "zebra",
    );
    expect(found?.results[0]?.matches).toBe(zebras.length);
    expect(found?.results[0]?.events).toEqual(zebras.slice(0, 5));
    expect(found?.results[0]?.conversation).toEqual(summarize(id, whole));
  });

  it("of a search hit in a log whose seqs are out of order are the whole log's, with the same events", async () => {
    const { id } = await openStore().create(
      temp.ws,
      ALICE,
      "edited",
      [{ type: "message", role: "user", content: [{ type: "text", text: "zebra one" }] }],
      NO_CALLER,
    );
    // An operator's edit: a second event numbered 2.
    await appendFile(logPath(id), line(event(2, "zebra again")));
    const { size } = await stat(logPath(id));
    const store = openStore();
    let found: Awaited<ReturnType<typeof searchConversations>> | undefined;
    const read = await bytesRead(async () => {
      found = await searchConversations(store.indexes, store, temp.ws, ALICE, { query: "zebra" });
    });
    // Whole three times, no more: for the index, for the head, and for the hit's events.
    expect(read).toBe(3 * size);
    const texts = found?.results[0]?.events.map((e) =>
      e.type === "message" && e.content[0]?.type === "text" ? e.content[0].text : e.type,
    );
    expect(texts).toEqual(["zebra one", "zebra again"]);
  });

  it("of a search hit in a log an operator put out of order since its head was kept are read whole twice", async () => {
    const store = openStore();
    const { id } = await store.create(
      temp.ws,
      ALICE,
      "edited",
      [
        {
          type: "message",
          role: "user",
          content: [{ type: "text", text: `zebra one ${"x".repeat(100_000)}` }],
        },
      ],
      NO_CALLER,
    );
    // A first hit keeps the head, in order.
    await searchConversations(store.indexes, store, temp.ws, ALICE, { query: "zebra" });
    await appendFile(logPath(id), line(event(2, "zebra again")));
    const { size } = await stat(logPath(id));
    const read = await bytesRead(() =>
      searchConversations(store.indexes, store, temp.ws, ALICE, { query: "zebra" }),
    );
    // Whole for the stale head, then for the hit's events (the index reads only what was added):
    // not a third time for a first page that found the head stale.
    expect(read).toBe(2 * size);
  });
});

describe("a search hit", () => {
  it("whose log's head is kept and current answers while an append holds the log's lock", async () => {
    const store = openStore();
    const { id } = await store.create(
      temp.ws,
      ALICE,
      "busy",
      [{ type: "message", role: "user", content: [{ type: "text", text: "zebra one" }] }],
      NO_CALLER,
    );
    await searchConversations(store.indexes, store, temp.ws, ALICE, { query: "zebra" });
    // Stands for an append holding the log's lock through its write and flush.
    const locks = (store as unknown as { locks: KeyedLock }).locks;
    const held = gate();
    const holding = locks.run(logPath(id), () => held.promise);
    // Waiting on the lock, this would never answer: the lock is let go only after it.
    const found = await searchConversations(store.indexes, store, temp.ws, ALICE, { query: "zebra" });
    held.open();
    await holding;
    expect(found.results).toHaveLength(1);
  });
});

describe("seq offsets", () => {
  it("answer a page with the bytes of one or two checkpoints' spans more than the page", () => {
    const offsets = new SeqOffsets();
    const eventBytes = 100;
    for (let seq = 1; seq <= 100_000; seq++) offsets.add((seq - 1) * eventBytes, [event(seq)]);
    const end = 100_000 * eventBytes;
    const newest = offsets.rangeFor({ order: "newest", limit: 100, after: undefined }, end);
    expect(newest?.to).toBe(end);
    expect(end - (newest?.from ?? 0)).toBeLessThanOrEqual(100 * eventBytes + CHECKPOINT_BYTES + eventBytes);
    expect(newest?.count).toBe(100_000);
    const middle = offsets.rangeFor({ order: "oldest", limit: 100, after: 50_000 }, end);
    expect(middle?.from).toBeLessThanOrEqual(50_000 * eventBytes);
    expect((middle?.to ?? 0) - (middle?.from ?? 0)).toBeLessThanOrEqual(
      100 * eventBytes + 2 * (CHECKPOINT_BYTES + eventBytes),
    );
    expect(middle?.first).toBe((middle?.from ?? 0) / eventBytes);
  });

  it("cannot answer once a seq is not above the one before it", () => {
    const offsets = new SeqOffsets();
    offsets.add(0, [event(1), event(2)]);
    expect(offsets.rangeFor({ order: "oldest", limit: 10, after: undefined }, 100)).toBeDefined();
    offsets.add(100, [event(2)]);
    expect(offsets.rangeFor({ order: "oldest", limit: 10, after: undefined }, 150)).toBeUndefined();
  });
});
