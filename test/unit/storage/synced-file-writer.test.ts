import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FLUSH_BEHIND_BYTES, SyncedFileWriter } from "../../../src/storage/synced-file-writer.ts";

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "atrium-synced-writer-"));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function writeAll(path: string, batches: Uint8Array[][]): Promise<SyncedFileWriter> {
  const writer = await SyncedFileWriter.create(path);
  try {
    for (const batch of batches) await writer.write(batch);
    await writer.sync();
  } finally {
    await writer.close();
  }
  return writer;
}

describe("SyncedFileWriter", () => {
  it("writes batches in order across several flushes behind, byte-identical", async () => {
    const path = join(dir, "content");
    // Uneven batches of uneven chunks, past three flush windows.
    const bytes = randomBytes(3 * FLUSH_BEHIND_BYTES + 12_345);
    const batches: Uint8Array[][] = [];
    for (let at = 0, i = 0; at < bytes.length; i++) {
      const size = Math.min(bytes.length - at, 700_000 + i * 91_000);
      batches.push([bytes.subarray(at, at + 1000), bytes.subarray(at + 1000, at + size)]);
      at += size;
    }
    const writer = await writeAll(path, batches);
    expect(writer.size).toBe(bytes.length);
    expect((await readFile(path)).equals(bytes)).toBe(true);
  });

  it("keeps the order of writes started before the previous one finished", async () => {
    const path = join(dir, "content");
    const writer = await SyncedFileWriter.create(path);
    const parts = [randomBytes(3 * 1024 * 1024), randomBytes(17), randomBytes(1024 * 1024)];
    await Promise.all(parts.map((part) => writer.write([part])));
    await writer.sync();
    await writer.close();
    expect((await readFile(path)).equals(Buffer.concat(parts))).toBe(true);
  });

  it("creates the file readable by its owner only, and an empty one when nothing is written", async () => {
    const path = join(dir, "content");
    const writer = await writeAll(path, [[], [new Uint8Array(0)]]);
    expect(writer.size).toBe(0);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect((await stat(path)).size).toBe(0);
  });

  it("refuses a path that exists and leaves its bytes alone", async () => {
    const path = join(dir, "content");
    await writeFile(path, "already here");
    await expect(SyncedFileWriter.create(path)).rejects.toMatchObject({ code: "EEXIST" });
    expect(await readFile(path, "utf8")).toBe("already here");
  });
});
