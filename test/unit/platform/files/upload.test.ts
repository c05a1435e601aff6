import { createHash, randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FileStore } from "../../../../src/platform/files/store.ts";
import { SyncedFileWriter } from "../../../../src/storage/synced-file-writer.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { listTree } from "../../../helpers/fs-tree.ts";
import { gate } from "../../../helpers/gate.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// An upload's bytes and SHA-256 through the synced writer (adr/0054), from a web stream: its
// chunks stay its producer's, whole (an earlier version handed them to a hashing thread, which
// detached them).
const ALICE = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";
const MAX_BYTES = 8 * 1024 * 1024;

let temp: TempRoot;
let files: FileStore;
let ws: string;

beforeEach(async () => {
  temp = await openTempRoot("file-upload", ALICE);
  ws = temp.ws;
  files = new FileStore(temp.layout.partition("files"), MAX_BYTES, temp.events, new FakeTime().clock);
});

afterEach(async () => {
  await temp.remove();
});

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

describe("FileStore.upload", () => {
  it("leaves a web stream's chunks to their producer: the same bytes after the upload", async () => {
    const chunks = [new Uint8Array(randomBytes(1024 * 1024)), new Uint8Array(randomBytes(300_000))];
    const kept = chunks.map((chunk) => Buffer.from(chunk));
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(chunk);
        controller.close();
      },
    });
    const meta = await files.upload(ws, ALICE, { name: "web.bin" }, stream, NO_CALLER);
    expect(chunks.map((chunk) => chunk.byteLength)).toEqual([1024 * 1024, 300_000]);
    expect(chunks.every((chunk, i) => Buffer.from(chunk).equals(kept[i] as Buffer))).toBe(true);
    expect(meta.sha256).toBe(sha256(Buffer.concat(kept)));
  });

  it("stores and digests a body of many batches byte-identical, the last one short", async () => {
    const bytes = randomBytes(5 * 1024 * 1024 + 4321);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < bytes.length; at += 64 * 1024)
          controller.enqueue(new Uint8Array(bytes.subarray(at, at + 64 * 1024)));
        controller.close();
      },
    });
    const meta = await files.upload(ws, ALICE, { name: "many.bin" }, stream, NO_CALLER);
    expect(meta.size).toBe(bytes.length);
    expect(meta.sha256).toBe(sha256(bytes));
    const stored = await readFile(
      join(temp.layout.partition("files").recordDir(ws, ALICE, meta.id), "content"),
    );
    expect(stored.equals(bytes)).toBe(true);
  });

  it("an empty body is an empty file with the empty SHA-256", async () => {
    const meta = await files.upload(ws, ALICE, { name: "empty.bin" }, null, NO_CALLER);
    expect(meta.size).toBe(0);
    expect(meta.sha256).toBe(sha256(new Uint8Array(0)));
  });

  it("a write that fails while the body is still arriving rejects the upload, leaves nothing, and is never unhandled", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      const diskFailed = new Error("EIO: the disk failed");
      const failedOnce = gate();
      // Patched by hand, not with vi.spyOn: a spy handles the promises it returns, which would
      // hide the unhandled rejection this test is about.
      const write = SyncedFileWriter.prototype.write;
      SyncedFileWriter.prototype.write = async () => {
        SyncedFileWriter.prototype.write = write;
        failedOnce.open();
        throw diskFailed;
      };
      // A first batch whole (1 MiB), then the body waits, as a slow client's does, until the
      // write has failed and the event loop has had a turn to report an unhandled rejection.
      const moreBody = gate();
      let pulls = 0;
      const stream = new ReadableStream<Uint8Array>({
        async pull(controller) {
          pulls++;
          if (pulls === 1) return controller.enqueue(new Uint8Array(1024 * 1024));
          await moreBody.promise;
          if (pulls === 2) return controller.enqueue(new Uint8Array(1000));
          controller.close();
        },
      });
      const upload = files.upload(ws, ALICE, { name: "slow.bin" }, stream, NO_CALLER);
      upload.catch(() => undefined);
      await failedOnce.promise;
      await new Promise((resolve) => setImmediate(resolve));
      moreBody.open();
      await expect(upload).rejects.toBe(diskFailed);
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
      const ownerDir = temp.layout.partition("files").ownerDir(ws, ALICE);
      expect(await listTree(ownerDir)).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });
});
