import { copyFile, readFile, rm, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { MAX_EVENT_SEQ } from "../../../../src/platform/conversations/limits.ts";
import type { EventDraft } from "../../../../src/platform/conversations/model.ts";
import type { ConversationStore } from "../../../../src/platform/conversations/store.ts";
import { RecoveryPass } from "../../../../src/storage/recovery.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { openConversationStore } from "../../../helpers/conversation-store.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

const ALICE = `usr_${"a".repeat(24)}`;

let temp: TempRoot;
let time: FakeTime;

function openStore(): ConversationStore {
  return openConversationStore(temp, time, {
    limits: { maxEventBytes: 64 * 1024, maxConversationBytes: 4 * 1024 * 1024 },
  });
}

function message(text: string): EventDraft {
  return { type: "message", role: "user", content: [{ type: "text", text }] } as EventDraft;
}

function texts(events: readonly unknown[]): string[] {
  return events.flatMap((event) => {
    const content = (event as { content?: { text?: string }[] }).content;
    return content?.[0]?.text !== undefined ? [content[0].text] : [];
  });
}

beforeEach(async () => {
  temp = await openTempRoot("conversation-edit", ALICE);
  time = new FakeTime();
});

afterEach(async () => {
  await temp.remove();
});

describe("a conversation log an operator edits while Atrium runs", () => {
  async function conversationWithLog(store: ConversationStore): Promise<{ id: string; path: string }> {
    const { id } = await store.create(
      temp.ws,
      ALICE,
      "t",
      [message("one"), message("two"), message("three")],
      NO_CALLER,
    );
    const path = join(temp.layout.partition("conversations").ownerDir(temp.ws, ALICE), `${id}.jsonl`);
    return { id, path };
  }

  it("an append after a line was removed by hand lands after the remaining lines, with no hole", async () => {
    const store = openStore();
    const { id, path } = await conversationWithLog(store);
    const lines = (await readFile(path, "utf8")).split("\n");
    await writeFile(path, lines.filter((line) => !line.includes('"two"')).join("\n"));

    await store.append(temp.ws, ALICE, id, [message("four")], NO_CALLER);
    const bytes = await readFile(path);
    expect(bytes.includes(0)).toBe(false);
    const reread = await openStore().get(temp.ws, ALICE, id);
    expect(texts(reread.events)).toEqual(["one", "three", "four"]);
  });

  it("the index forgets what was removed by hand once the log is appended to again", async () => {
    const store = openStore();
    const { id, path } = await conversationWithLog(store);
    const search = (word: string) =>
      store.indexes.read(temp.ws, ALICE, async ({ index }) => (await index.search(word, undefined, 10)).hits);
    expect(await search("two")).toHaveLength(1);
    const lines = (await readFile(path, "utf8")).split("\n");
    await writeFile(path, lines.filter((line) => !line.includes('"two"')).join("\n"));

    await store.append(temp.ws, ALICE, id, [message("four")], NO_CALLER);
    expect(await search("two")).toEqual([]);
    expect((await search("four"))[0]?.summary.id).toBe(id);
    expect((await search("three"))[0]?.summary.eventCount).toBe(5);
  });

  it("the index learns of a hand edit at the next append, also when a page read the log in between", async () => {
    const store = openStore();
    const { id, path } = await conversationWithLog(store);
    const search = (word: string) =>
      store.indexes.read(temp.ws, ALICE, async ({ index }) => (await index.search(word, undefined, 10)).hits);
    expect(await search("two")).toHaveLength(1);
    // The same size, every line where it was: only the stamp says the log changed.
    await writeFile(path, (await readFile(path, "utf8")).replace('"two"', '"owt"'));

    // The page reads the log again for its head; the append after it must still tell the index.
    expect(texts((await store.get(temp.ws, ALICE, id)).events)).toEqual(["one", "owt", "three"]);
    await store.append(temp.ws, ALICE, id, [message("four")], NO_CALLER);
    expect(await search("two")).toEqual([]);
    expect((await search("owt"))[0]?.summary.id).toBe(id);
  });

  it("a page of a log removed by hand is not found, whatever its cursor", async () => {
    const store = openStore();
    const { id, path } = await conversationWithLog(store);
    await store.get(temp.ws, ALICE, id);
    await rm(path);
    for (const request of [{}, { cursor: "bm9wZQ" }, { limit: 0 }]) {
      await expect(store.get(temp.ws, ALICE, id, request)).rejects.toMatchObject({
        code: "conversation_not_found",
      });
    }
  });

  it("an append to a log emptied by hand answers its first event's time as the creation time", async () => {
    const store = openStore();
    const { id, path } = await conversationWithLog(store);
    await writeFile(path, "");
    time.jump(60_000);

    const { conversation, events } = await store.append(temp.ws, ALICE, id, [message("anew")], NO_CALLER);
    expect(conversation.createdAt).toBe(events[0]?.at);
    expect(conversation).toEqual((await openStore().get(temp.ws, ALICE, id)).conversation);
  });

  it("an index saved before a hand edit is rebuilt for that log at the next start", async () => {
    const store = openStore();
    const { id, path } = await conversationWithLog(store);
    const searchIn = (s: ConversationStore, word: string) =>
      s.indexes.read(temp.ws, ALICE, async ({ index }) => (await index.search(word, undefined, 10)).hits);
    expect(await searchIn(store, "two")).toHaveLength(1);
    await store.indexes.flush();
    // Shorter by one line, then longer than before: the saved coverage now falls mid-line.
    const kept = (await readFile(path, "utf8")).split("\n").filter((line) => !line.includes('"two"'));
    const added = JSON.stringify({
      seq: 5,
      at: "2026-01-01T00:00:00.000Z",
      type: "message",
      role: "user",
      content: [{ type: "text", text: "zebra ".repeat(40) }],
    });
    await writeFile(path, `${kept.join("\n")}${added}\n`);

    const restarted = openStore();
    expect(await searchIn(restarted, "two")).toEqual([]);
    expect((await searchIn(restarted, "zebra"))[0]?.summary.id).toBe(id);
  });

  it("an append after lines were added by hand keeps them", async () => {
    const store = openStore();
    const { id, path } = await conversationWithLog(store);
    const added = `${JSON.stringify({ seq: 5, at: "2026-01-01T00:00:00.000Z", type: "message", role: "user", content: [{ type: "text", text: "by hand" }] })}\n`;
    await writeFile(path, `${await readFile(path, "utf8")}${added}`);

    const { events } = await store.append(temp.ws, ALICE, id, [message("after")], NO_CALLER);
    expect(events[0]?.seq).toBe(6);
    const reread = await openStore().get(temp.ws, ALICE, id);
    expect(texts(reread.events)).toEqual(["one", "two", "three", "by hand", "after"]);
  });
});

describe("the index after a writer's change", () => {
  it("a failed index update is not the writer's failure: the append stands once, and the index reloads", async () => {
    const store = openStore();
    const { id } = await store.create(temp.ws, ALICE, "t", [message("one")], NO_CALLER);
    const failing = vi
      .spyOn(store.indexes as unknown as { catchUp: () => Promise<void> }, "catchUp")
      .mockRejectedValueOnce(new Error("EIO: the disk said no"));
    await store.indexes.appended(temp.ws, ALICE, id, { from: 1, to: 2, events: [] });
    expect(failing).toHaveBeenCalledTimes(1);
    failing.mockRestore();

    const { events } = await store.append(temp.ws, ALICE, id, [message("two")], NO_CALLER);
    expect(events).toHaveLength(1);
    const hits = await store.indexes.read(
      temp.ws,
      ALICE,
      async ({ index }) => (await index.search("two", undefined, 10)).hits,
    );
    expect(hits.map((hit) => hit.summary.id)).toEqual([id]);
    expect(texts((await store.get(temp.ws, ALICE, id)).events)).toEqual(["one", "two"]);
  });
});

describe("a conversation log an operator copies in on disk", () => {
  it("is found by its bare id once housekeeping has walked its folder", async () => {
    const store = openStore();
    const { id } = await store.create(temp.ws, ALICE, "t", [message("one")], NO_CALLER);
    const folder = temp.layout.partition("conversations").ownerDir(temp.ws, ALICE);
    const copyId = `cv_${"c".repeat(24)}`;
    await writeFile(join(folder, `${copyId}.jsonl`), await readFile(join(folder, `${id}.jsonl`)));

    await expect(store.locate(ALICE, copyId, () => true)).rejects.toThrow();
    await store.recoverWorkspace(temp.ws, new Set(["conversations"]), RecoveryPass.housekeeping(Date.now()));
    expect(await store.locate(ALICE, copyId, () => true)).toBe(temp.ws);
    expect(texts((await store.get(temp.ws, ALICE, copyId)).events)).toEqual(["one"]);
  });
});

describe("a conversation log restored from a backup of the same size, its time kept", () => {
  it("is paged from the file on disk, not from the head kept of the log it replaced", async () => {
    const store = openStore();
    const { id } = await store.create(temp.ws, ALICE, "t", [message("one"), message("two")], NO_CALLER);
    const path = join(temp.layout.partition("conversations").ownerDir(temp.ws, ALICE), `${id}.jsonl`);
    const then = new Date("2026-01-01T00:00:00Z");
    await utimes(path, then, then);
    expect((await store.get(temp.ws, ALICE, id)).conversation.title).toBe("t");

    // The title changed by hand in a backup (same length), restored with `rm` and `cp -p`: same
    // size and modification time, and on ext4 often the same inode.
    const backup = `${path}.bak`;
    await writeFile(backup, (await readFile(path, "utf8")).replace('"title":"t"', '"title":"u"'));
    await utimes(backup, then, then);
    await rm(path);
    await copyFile(backup, path);
    await utimes(path, then, then);
    await rm(backup);

    const page = await store.get(temp.ws, ALICE, id);
    expect(page.conversation.title).toBe("u");
    expect(texts(page.events)).toEqual(["one", "two"]);
  });

  it("an append that would number an event past 2^21 − 1 is refused 413 and writes nothing", async () => {
    // The search index keeps a seq in 21 bits: a higher one was another conversation's event
    // (adr/0117). Appends alone cannot get there within maxConversationBytes; a hand edit can.
    const store = openStore();
    const { id } = await store.create(temp.ws, ALICE, "t", [message("one")], NO_CALLER);
    const path = join(temp.layout.partition("conversations").ownerDir(temp.ws, ALICE), `${id}.jsonl`);
    const last = {
      seq: MAX_EVENT_SEQ - 1,
      at: new Date(time.clock()).toISOString(),
      type: "title",
      title: "",
    };
    await writeFile(path, `${await readFile(path, "utf8")}${JSON.stringify(last)}\n`);
    const one = await store.append(temp.ws, ALICE, id, [message("fits")], NO_CALLER);
    expect(one.events.map((e) => e.seq)).toEqual([MAX_EVENT_SEQ]);
    const before = await readFile(path);
    const refused = await store
      .append(temp.ws, ALICE, id, [message("past")], NO_CALLER)
      .catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: "conversation_too_large", status: 413 });
    expect((refused as Error).message).toContain(String(MAX_EVENT_SEQ));
    expect(await readFile(path)).toEqual(before);
    expect(texts((await store.get(temp.ws, ALICE, id, { order: "newest", limit: 1 })).events)).toEqual([
      "fits",
    ]);
    const fork = await store.fork(temp.ws, ALICE, id, {}, NO_CALLER).catch((error: unknown) => error);
    expect(fork).toMatchObject({ code: "conversation_too_large" });
  });
});
