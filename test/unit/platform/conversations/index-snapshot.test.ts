import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SNAPSHOT_FILE } from "../../../../src/platform/conversations/conversation-indexes.ts";
import { searchConversations } from "../../../../src/platform/conversations/finder.ts";
import { INDEX_LIMITS } from "../../../../src/platform/conversations/index-limits.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { openConversationStore, said } from "../../../helpers/conversation-store.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// A snapshot is renamed into place whole, so one that lost lines was cut by an operator or a disk
// fault: read, its lost words were silently missing from searches, with nothing read from the
// logs, under a generation that kept old cursors (adr/0144).

const ALICE = `usr_${"a".repeat(24)}`;
const limits = { ...INDEX_LIMITS, searchPostings: 1 };
let temp: TempRoot;
let time: FakeTime;

beforeEach(async () => {
  temp = await openTempRoot("index-snapshot", ALICE);
  time = new FakeTime();
});
afterEach(async () => temp.remove());

/**
 * Two conversations holding "apple", saved at a graceful stop, its snapshot's lines then kept by
 * `keep`; answers the cursor of a first search page given before the stop.
 */
async function savedThenCut(keep: (line: string, at: number, lines: string[]) => boolean): Promise<string> {
  const store = openConversationStore(temp, time, { index: { limits } });
  await store.create(temp.ws, ALICE, "A", [said("apple pie")], NO_CALLER);
  time.jump(1000);
  await store.create(temp.ws, ALICE, "B", [said("apple tart")], NO_CALLER);
  const first = await searchConversations(store.indexes, store, temp.ws, ALICE, { query: "apple", limit: 1 });
  expect(first.nextCursor).toBeDefined();
  await store.indexes.stop();
  const path = join(temp.layout.partition("conversations").ownerDir(temp.ws, ALICE), SNAPSHOT_FILE);
  const lines = (await readFile(path, "utf8")).split("\n").slice(0, -1);
  const cut = lines.filter(keep);
  expect(cut.length).toBeLessThan(lines.length);
  // Cut at a line boundary: every line left whole, newline and all.
  await writeFile(path, `${cut.join("\n")}\n`);
  return first.nextCursor as string;
}

describe("a conversation index snapshot cut at a line boundary", () => {
  for (const [name, keep] of [
    ["its numbers and postings lost", (line: string) => !/^\{"(events|postings|end)"/.test(line)],
    [
      "its last postings line lost",
      (_: string, at: number, lines: string[]) =>
        at !== lines.findLastIndex((line) => line.startsWith('{"postings"')),
    ],
  ] as const) {
    it(`is not read, with ${name}: the logs rebuild the index, under a new generation`, async () => {
      const cursor = await savedThenCut(keep);
      // Whole budgets, so one page answers every match.
      const restarted = openConversationStore(temp, time);
      const page = await searchConversations(restarted.indexes, restarted, temp.ws, ALICE, {
        query: "apple",
        limit: 10,
      });
      // Both logs hold "apple", and the logs are the truth.
      expect(page.results.map((r) => r.conversation.title).sort()).toEqual(["A", "B"]);
      // The rebuilt index may number the events otherwise: the old cursor is refused, not misread.
      await expect(
        searchConversations(restarted.indexes, restarted, temp.ws, ALICE, {
          query: "apple",
          limit: 1,
          cursor,
        }),
      ).rejects.toThrow("search again without a cursor");
      await restarted.indexes.stop();
    });
  }
});
