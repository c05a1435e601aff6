import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { listConversations, searchConversations } from "../../../../src/platform/conversations/finder.ts";
import type { ConversationEvent } from "../../../../src/platform/conversations/model.ts";
import type { ConversationStore } from "../../../../src/platform/conversations/store.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { openConversationStore, said } from "../../../helpers/conversation-store.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { journalDuring } from "../../../helpers/fs-journal.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// A write answered with an error is not stored (adr/0116): a failed flush of an append or of a
// new log's folder entry used to answer an error for a write that was kept, so the client's retry
// stored it twice.

const ALICE = `usr_${"a".repeat(24)}`;
let temp: TempRoot;
let time: FakeTime;

beforeEach(async () => {
  temp = await openTempRoot("flush-failure", ALICE);
  time = new FakeTime();
});
afterEach(async () => temp.remove());

const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });
const words = (events: ConversationEvent[]) =>
  events.map((e) => (e.type === "message" && e.content[0]?.type === "text" ? e.content[0].text : e.type));

/** Runs `work`, failing the first `count` flushes of paths `which` picks. */
async function failingFlushes(which: (path: string) => boolean, count: number, work: () => Promise<unknown>) {
  let left = count;
  let answer: unknown;
  await journalDuring(
    async () => {
      answer = await work().then(
        () => "stored",
        (error: NodeJS.ErrnoException) => error.code,
      );
    },
    { sync: (path) => (which(path) && left-- > 0 ? eio() : undefined) },
  );
  return answer;
}

describe("an append whose flush fails", () => {
  for (const [name, failures] of [
    ["is refused and not stored: the log reads as before, and a retry stores it once", 1],
    [
      "whose cut cannot be flushed either is still refused, and the next append lands after the log as it is",
      2,
    ],
  ] as const) {
    it(name, async () => {
      const store = openConversationStore(temp, time);
      const { id } = await store.create(temp.ws, ALICE, "t", [said("one")], NO_CALLER);
      const log = join(temp.layout.partition("conversations").ownerDir(temp.ws, ALICE), `${id}.jsonl`);
      const before = (await stat(log)).size;
      const answer = await failingFlushes(
        (path) => path === log,
        failures,
        () => store.append(temp.ws, ALICE, id, [said("two")], NO_CALLER),
      );
      expect(answer).toBe("EIO");
      expect((await stat(log)).size).toBe(before);
      expect(words((await store.get(temp.ws, ALICE, id)).events)).toEqual(["title", "one"]);
      expect(words((await openConversationStore(temp, time).get(temp.ws, ALICE, id)).events)).toEqual([
        "title",
        "one",
      ]);
      const search = await searchConversations(store.indexes, store, temp.ws, ALICE, { query: "two" });
      expect(search.results).toEqual([]);
      // The client retries, as an error invites: the append is stored once.
      await store.append(temp.ws, ALICE, id, [said("two")], NO_CALLER);
      const after = await store.get(temp.ws, ALICE, id);
      expect(words(after.events)).toEqual(["title", "one", "two"]);
      expect(after.events.map((e) => e.seq)).toEqual([1, 2, 3]);
    });
  }
});

describe("a create whose folder flush fails", () => {
  it("is refused and leaves no conversation: not listed, not on disk, and a retry makes one", async () => {
    const store = openConversationStore(temp, time);
    await store.create(temp.ws, ALICE, "first", undefined, NO_CALLER);
    const ownerDir = temp.layout.partition("conversations").ownerDir(temp.ws, ALICE);
    const logs = async () => (await readdir(ownerDir)).filter((name) => name.endsWith(".jsonl"));
    expect(await logs()).toHaveLength(1);
    const titles = async (s: ConversationStore) =>
      (await listConversations(s.indexes, temp.ws, ALICE, {})).conversations.map((c) => c.title);
    for (const make of [
      () => store.create(temp.ws, ALICE, "second", undefined, NO_CALLER),
      async () =>
        store.fork(
          temp.ws,
          ALICE,
          (await store.indexes.read(temp.ws, ALICE, ({ index }) => index.ids()))[0] as string,
          {},
          NO_CALLER,
        ),
    ]) {
      const answer = await failingFlushes((path) => path === ownerDir, 1, make);
      expect(answer).toBe("EIO");
      expect(await logs()).toHaveLength(1);
      expect(await titles(store)).toEqual(["first"]);
      expect(await titles(openConversationStore(temp, time))).toEqual(["first"]);
    }
    time.jump(1000);
    await store.create(temp.ws, ALICE, "second", undefined, NO_CALLER);
    expect(await titles(store)).toEqual(["second", "first"]);
  });
});
