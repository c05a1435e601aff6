import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { appendLog, readLog } from "../../../../src/platform/conversations/log-file.ts";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "atrium-conv-log-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const line = (seq: number) =>
  `${JSON.stringify({ seq, at: "2026-01-01T00:00:00.000Z", type: "title", title: `t${seq}` })}\n`;

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
});
