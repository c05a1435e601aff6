import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../../../src/log.ts";
import { ConversationIndexes } from "../../../../src/platform/conversations/conversation-indexes.ts";
import type { EventDraft } from "../../../../src/platform/conversations/model.ts";
import { ConversationStore } from "../../../../src/platform/conversations/store.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

const ALICE = `usr_${"a".repeat(24)}`;

let temp: TempRoot;
let time: FakeTime;

function openStore(): ConversationStore {
  const storage = temp.layout.partition("conversations");
  return new ConversationStore(
    storage,
    { maxEventBytes: 64 * 1024, maxConversationBytes: 4 * 1024 * 1024 },
    new ConversationIndexes(storage, time.timers, createLogger("silent")),
    temp.events,
    time.clock,
    async () => true,
  );
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
    const { id } = await store.create(temp.ws, ALICE, "t", [
      message("one"),
      message("two"),
      message("three"),
    ]);
    const path = join(temp.layout.partition("conversations").ownerDir(temp.ws, ALICE), `${id}.jsonl`);
    return { id, path };
  }

  it("an append after a line was removed by hand lands after the remaining lines, with no hole", async () => {
    const store = openStore();
    const { id, path } = await conversationWithLog(store);
    const lines = (await readFile(path, "utf8")).split("\n");
    await writeFile(path, lines.filter((line) => !line.includes('"two"')).join("\n"));

    await store.append(temp.ws, ALICE, id, [message("four")]);
    const bytes = await readFile(path);
    expect(bytes.includes(0)).toBe(false);
    const reread = await openStore().get(temp.ws, ALICE, id);
    expect(texts(reread.events)).toEqual(["one", "three", "four"]);
  });

  it("an append after lines were added by hand keeps them", async () => {
    const store = openStore();
    const { id, path } = await conversationWithLog(store);
    const added = `${JSON.stringify({ seq: 5, at: "2026-01-01T00:00:00.000Z", type: "message", role: "user", content: [{ type: "text", text: "by hand" }] })}\n`;
    await writeFile(path, `${await readFile(path, "utf8")}${added}`);

    const { events } = await store.append(temp.ws, ALICE, id, [message("after")]);
    expect(events[0]?.seq).toBe(6);
    const reread = await openStore().get(temp.ws, ALICE, id);
    expect(texts(reread.events)).toEqual(["one", "two", "three", "by hand", "after"]);
  });
});
