import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { appendLines, appendLog, readLog } from "../../../../src/platform/conversations/log-file.ts";
import type { ConversationEvent } from "../../../../src/platform/conversations/model.ts";
import { storageFullReason } from "../../../../src/storage/storage-full.ts";
import { canMount, mountSmallDisk } from "../../../helpers/small-disk.ts";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "atrium-conv-log-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const line = (seq: number) =>
  `${JSON.stringify({ seq, at: "2026-01-01T00:00:00.000Z", type: "title", title: `t${seq}` })}\n`;

const title = (seq: number): ConversationEvent => ({
  seq,
  at: "2026-01-01T00:00:00.000Z",
  type: "title",
  title: `t${seq}`,
});

describe("a conversation log", () => {
  it("reads whole lines only: a torn last line and a whole line that is no event are skipped", async () => {
    const path = join(dir, "log.jsonl");
    const whole = `${line(1)}not json\n{"seq":0}\n${line(2)}`;
    await writeFile(path, `${whole}{"seq":3,"at":"2026`);
    const read = await readLog(path);
    expect(read.events.map((e) => e.seq)).toEqual([1, 2]);
    expect(read.end).toBe(Buffer.byteLength(whole));
    expect(read.size).toBeGreaterThan(read.end);
    const tail = await readLog(path, Buffer.byteLength(line(1)));
    expect(tail.events.map((e) => e.seq)).toEqual([2]);
  });

  it("an append cuts off a torn tail and writes after the last whole line", async () => {
    const path = join(dir, "log.jsonl");
    await writeFile(path, `${line(1)}{"seq":2,"at":"20`);
    const { end } = await readLog(path);
    await appendLog(path, end, Buffer.from(line(2)));
    expect(await readFile(path, "utf8")).toBe(`${line(1)}${line(2)}`);
  });

  it("an append to a log shorter than its end is refused, and nothing is written", async () => {
    const path = join(dir, "log.jsonl");
    await writeFile(path, `${line(1)}${line(2)}`);
    const { end } = await readLog(path);
    await writeFile(path, line(1));
    await expect(appendLog(path, end, Buffer.from(line(3)))).rejects.toMatchObject({
      status: 409,
      code: "conversation_changed",
    });
    expect(await readFile(path, "utf8")).toBe(line(1));
  });

  it("a missing log is ENOENT, for the store to answer as not found", async () => {
    await expect(readLog(join(dir, "none.jsonl"))).rejects.toMatchObject({ code: "ENOENT" });
    await expect(appendLog(join(dir, "none.jsonl"), 0, Buffer.from(line(1)))).rejects.toMatchObject({
      code: "ENOENT",
    });
  });

  it("sees an append of several events all or not at all, whichever whole lines of it reached the log", async () => {
    const path = join(dir, "log.jsonl");
    const group = Buffer.concat(appendLines([title(2), title(3), title(4)])).toString("utf8");
    const lines = group
      .split("\n")
      .slice(0, 3)
      .map((text) => `${text}\n`);
    // A crash after two of its three lines were written whole (and a torn third).
    await writeFile(path, `${line(1)}${lines[0]}${lines[1]}${lines[2]?.slice(0, 10)}`);
    const cut = await readLog(path);
    expect(cut.events.map((e) => e.seq)).toEqual([1]);
    expect(cut.end).toBe(Buffer.byteLength(line(1)));
    // The next append cuts the whole group off, not only its torn line.
    await appendLog(path, cut.end, Buffer.from(line(2)));
    expect(await readFile(path, "utf8")).toBe(`${line(1)}${line(2)}`);
    // Once whole, the group reads as its events, without the mark that joins them.
    await writeFile(path, `${line(1)}${group}`);
    const whole = await readLog(path);
    expect(whole.events).toEqual([title(1), title(2), title(3), title(4)]);
    expect(whole.end).toBe(Buffer.byteLength(`${line(1)}${group}`));
  });

  it("skips a group a hand edit left open and reads the lines after it", async () => {
    const path = join(dir, "log.jsonl");
    const [first] = appendLines([title(2), title(3)]);
    await writeFile(path, `${line(1)}${first?.toString("utf8")}${line(4)}`);
    expect((await readLog(path)).events.map((e) => e.seq)).toEqual([1, 4]);
  });

  it("skips a whole line whose JSON is not an event that list, search and export can read", async () => {
    const path = join(dir, "log.jsonl");
    const at = "2026-01-01T00:00:00.000Z";
    const foreign = [
      { seq: 2, at, type: "note" },
      { seq: 3, at, type: "message", content: "hi" },
      { seq: 4, at, type: "message", role: "user", content: [{ type: "text" }] },
      { seq: 5, at, type: "message", role: "robot", content: [{ type: "text", text: "x" }] },
      { seq: 6, at, type: "title" },
      { seq: 7, at, type: "fork", from: "cv_1" },
      {
        seq: 8,
        at,
        type: "message",
        role: "user",
        content: [{ type: "tool_call", id: "1", name: "x", arguments: [] }],
      },
    ];
    const message = { seq: 9, at, type: "message", role: "user", content: [{ type: "text", text: "ok" }] };
    await writeFile(
      path,
      `${line(1)}${foreign.map((e) => `${JSON.stringify(e)}\n`).join("")}${JSON.stringify(message)}\n`,
    );
    expect((await readLog(path)).events.map((e) => e.seq)).toEqual([1, 9]);
  });

  it("reads a log of several megabytes whole, across the turns its parsing is split into", async () => {
    const path = join(dir, "log.jsonl");
    const body = "x".repeat(1000);
    const lines = Array.from({ length: 5000 }, (_, i) =>
      JSON.stringify({ seq: i + 1, at: "2026-01-01T00:00:00.000Z", type: "title", title: `${i + 1}${body}` }),
    );
    await writeFile(path, `${lines.join("\n")}\n`);
    const read = await readLog(path);
    expect(read.events).toHaveLength(5000);
    expect(read.events.every((event, i) => event.seq === i + 1)).toBe(true);
    expect(read.end).toBe(read.size);
  });
});

describe.skipIf(!canMount)("an append on a disk that fills during its write", () => {
  it("is a full disk's error, and the log is cut back to where the append began", async () => {
    const disk = await mountSmallDisk("4m");
    try {
      const path = join(disk.dir, "log.jsonl");
      await writeFile(path, line(1));
      const { end } = await readLog(path);
      disk.fillLeaving(8192);
      // Some of it fits, the rest does not: the kernel answers a short count, not ENOSPC.
      const lines = Buffer.from(`${JSON.stringify({ ...title(2), title: "x".repeat(64 * 1024) })}\n`);
      const error = await appendLog(path, end, lines).then(
        () => "stored",
        (thrown: unknown) => thrown,
      );
      expect(storageFullReason(error), String(error)).toBe("short write");
      expect(await readFile(path, "utf8")).toBe(line(1));
    } finally {
      await disk.unmount();
    }
  });
});
