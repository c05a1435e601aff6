import { appendFile, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  type IndexOptions,
  SNAPSHOT_FILE,
} from "../../../../src/platform/conversations/conversation-indexes.ts";
import { CONVERSATION_INDEX_IDLE_MS } from "../../../../src/platform/conversations/loaded-partitions.ts";
import type { EventDraft } from "../../../../src/platform/conversations/model.ts";
import { PartitionIndex } from "../../../../src/platform/conversations/partition-index.ts";
import type { ConversationStore } from "../../../../src/platform/conversations/store.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { openConversationStore } from "../../../helpers/conversation-store.ts";
import { eventually } from "../../../helpers/eventually.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

const owner = (n: number) => `usr_${n.toString(16).padStart(24, "0")}`;

let temp: TempRoot;
let time: FakeTime;

function openStore(index: IndexOptions = {}): ConversationStore {
  return openConversationStore(temp, time, { index });
}

/** `count` words no other call gives, as a hostile client would send. */
let nextWord = 1e8;
function distinctText(count: number): string {
  return Array.from({ length: count }, () => (nextWord++).toString(36)).join(" ");
}

function message(text: string): EventDraft {
  return { type: "message", role: "user", content: [{ type: "text", text }] } as EventDraft;
}

/** What a search for each word answers in the owner's partition: ids and seqs, and the logs it read. */
async function answers(store: ConversationStore, ownerId: string, words: string[]) {
  return store.indexes.read(temp.ws, ownerId, async ({ index, logsRead }) => {
    const hits = [];
    for (const word of words) {
      hits.push((await index.search(word, undefined, 10)).hits.map((h) => [h.summary.id, h.seqs]));
    }
    return { logsRead, hits };
  });
}

beforeEach(async () => {
  temp = await openTempRoot("conversation-indexes", owner(1));
  time = new FakeTime();
});

afterEach(async () => {
  await temp.remove();
});

describe("the conversation indexes in memory", () => {
  it("stay within their byte budget, dropping the least recently used, which reload with the same answers", async () => {
    // Each owner's index is about 1.5 MB estimated: 10 events of 2,000 words no other holds.
    const budget = 4 * 1024 * 1024;
    const store = openStore({ maxLoadedBytes: budget });
    const owners = [1, 2, 3, 4, 5, 6].map(owner);
    const words = new Map<string, string[]>();
    for (const ownerId of owners) {
      const texts = Array.from({ length: 10 }, () => distinctText(2_000));
      await store.create(temp.ws, ownerId, "shared title", texts.map(message), NO_CALLER);
      words.set(ownerId, ["shared", ...texts.map((t) => t.split(" ")[1] ?? "")]);
    }
    const before = new Map<string, unknown>();
    for (const ownerId of owners) {
      before.set(ownerId, (await answers(store, ownerId, words.get(ownerId) ?? [])).hits);
      // Within the budget, but for the one in use, whatever it costs.
      await eventually(() => expect(store.indexes.loadedBytes).toBeLessThanOrEqual(budget + 2 * 1024 * 1024));
    }
    await eventually(() => expect(store.indexes.loadedPartitions).toBeLessThanOrEqual(3));
    // Dropped ones were saved first: they come back from their snapshot, with no log read.
    for (const ownerId of owners) {
      const again = await answers(store, ownerId, words.get(ownerId) ?? []);
      expect(again.hits).toEqual(before.get(ownerId));
      expect(again.logsRead).toBe(0);
    }
  });

  it("indexes a log as it reads it at a restart, never holding all of its events at once", async () => {
    const { id } = await openStore().create(temp.ws, owner(1), "t", [message("first")], NO_CALLER);
    const log = join(temp.layout.partition("conversations").ownerDir(temp.ws, owner(1)), `${id}.jsonl`);
    const lines = (await readFile(log, "utf8")).trim().split("\n");
    const template = JSON.parse(lines.at(-1) ?? "") as { seq: number };
    // 3,000 more events of about 1,000 characters each: three megabytes of text, as an operator's
    // copy or appends a restart finds beyond the snapshot.
    const count = 3000;
    const more: string[] = [];
    for (let seq = template.seq + 1; seq <= template.seq + count; seq++) {
      const text = `word${seq} ${"x".repeat(990)}`;
      more.push(JSON.stringify({ ...template, seq, content: [{ type: "text", text }] }));
    }
    await appendFile(log, `${more.join("\n")}\n`);
    // Counted, and passed on to the real ones: how many lines were parsed when the index got its first events.
    const parse = vi.spyOn(JSON, "parse");
    const realApply = PartitionIndex.prototype.apply;
    let parsedAtFirstApply: number | undefined;
    const apply = vi.spyOn(PartitionIndex.prototype, "apply").mockImplementation(function (
      this: PartitionIndex,
      ...args: Parameters<PartitionIndex["apply"]>
    ) {
      parsedAtFirstApply ??= parse.mock.calls.length;
      return realApply.apply(this, args);
    });
    try {
      const restarted = openStore();
      const found = await answers(restarted, owner(1), [`word${template.seq + count}`, "first"]);
      expect(found.hits).toEqual([[[id, [template.seq + count]]], [[id, [template.seq]]]]);
    } finally {
      apply.mockRestore();
      parse.mockRestore();
    }
    // The first events were indexed before half of the log was parsed (a megabyte of text at a time).
    expect(parsedAtFirstApply).toBeLessThan(count / 2);
  });

  it("indexes a log of little text a megabyte of the log at a time, not all its events in one batch", async () => {
    const { id } = await openStore().create(temp.ws, owner(1), "t", [message("first")], NO_CALLER);
    const log = join(temp.layout.partition("conversations").ownerDir(temp.ws, owner(1)), `${id}.jsonl`);
    const template = JSON.parse((await readFile(log, "utf8")).trim().split("\n").at(-1) ?? "") as {
      seq: number;
    };
    // 3,000 events of ten tool calls each: about 2.3 KB a line, 20 characters of text (a tool
    // call's name and arguments are text, its id is not), so the text bound alone never applies.
    const lines: string[] = [];
    for (let seq = template.seq + 1; seq <= template.seq + 3000; seq++) {
      const content = Array.from({ length: 10 }, (_, i) => ({
        type: "tool_call",
        id: `${seq}-${i}-`.padEnd(200, "i"),
        name: "t",
      }));
      lines.push(JSON.stringify({ ...template, seq, role: "assistant", content }));
    }
    await appendFile(log, `${lines.join("\n")}\n`);
    expect((await stat(log)).size).toBeGreaterThan(6 * 1024 * 1024);
    const realApply = PartitionIndex.prototype.apply;
    const batchBytes: number[] = [];
    const apply = vi.spyOn(PartitionIndex.prototype, "apply").mockImplementation(function (
      this: PartitionIndex,
      ...args: Parameters<PartitionIndex["apply"]>
    ) {
      batchBytes.push(args[1].reduce((bytes, event) => bytes + JSON.stringify(event).length + 1, 0));
      return realApply.apply(this, args);
    });
    try {
      const found = await answers(openStore(), owner(1), ["first"]);
      expect(found.hits).toEqual([[[id, [template.seq]]]]);
    } finally {
      apply.mockRestore();
    }
    // A megabyte of the log, and the group that crossed it.
    expect(batchBytes.length).toBeGreaterThan(5);
    expect(Math.max(...batchBytes)).toBeLessThan(1024 * 1024 + 4096);
  });

  it("drops a partition unused for the idle time, saved, and reloads it from its snapshot", async () => {
    const store = openStore();
    const text = distinctText(50);
    const { id } = await store.create(temp.ws, owner(1), "t", [message(text)], NO_CALLER);
    const word = text.split(" ")[3] ?? "";
    const first = await answers(store, owner(1), [word]);
    expect(first.hits).toEqual([[[id, [2]]]]);
    expect(store.indexes.loadedPartitions).toBe(1);

    // Used again half way: kept past the first sweep.
    await time.advance(CONVERSATION_INDEX_IDLE_MS / 2);
    await answers(store, owner(1), [word]);
    await time.advance(CONVERSATION_INDEX_IDLE_MS / 2);
    expect(store.indexes.loadedPartitions).toBe(1);

    await time.advance(CONVERSATION_INDEX_IDLE_MS);
    await eventually(() => expect(store.indexes.loadedPartitions).toBe(0));
    const snapshot = join(temp.layout.partition("conversations").ownerDir(temp.ws, owner(1)), SNAPSHOT_FILE);
    expect((await stat(snapshot)).size).toBeGreaterThan(0);
    expect(await answers(store, owner(1), [word])).toEqual({ logsRead: 0, hits: first.hits });
  });
});
