import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { PayloadTooLarge } from "../../errors.ts";
import type { SyncedFileWriter } from "../../storage/synced-file-writer.ts";

const PROGRESS_CHUNK_BYTES = 1024 * 1024;
/** Bytes of an upload gathered before they are written in one `writev`. */
const WRITE_BATCH_BYTES = 1024 * 1024;

/** Told the bytes stored so far and the total, after each chunk reaches the file. */
export type WriteProgress = (written: number, total: number) => Promise<void> | void;

/** Writes a new file's content through its writer and answers the content's SHA-256, hex. */
export type ContentFill = (writer: SyncedFileWriter) => Promise<string>;

/**
 * Bytes already in memory (files__write). With `onProgress`, they go to disk a chunk at a time
 * and each chunk is reported once written, so a caller can show a large write advancing.
 */
export function fillFromBytes(content: Uint8Array, onProgress?: WriteProgress): ContentFill {
  return async (writer) => {
    const digest = createHash("sha256").update(content).digest("hex");
    if (!onProgress) await writer.write([content]);
    else
      do {
        const chunk = content.subarray(writer.size, writer.size + PROGRESS_CHUNK_BYTES);
        await writer.write([chunk]);
        await onProgress(writer.size, content.byteLength);
      } while (writer.size < content.byteLength);
    return digest;
  };
}

/**
 * A body streamed to disk, counted as it goes and refused past `maxBytes`. A Node stream (the
 * request itself) is read as it is, with no web stream between; chunks go to disk a batch at a
 * time in one `writev` each, no chunk copied, flushed to disk behind the writes
 * (storage/synced-file-writer.ts, adr/0054).
 */
export function fillFromBody(
  body: Readable | ReadableStream<Uint8Array> | null,
  maxBytes: number,
): ContentFill {
  return async (writer) => {
    // Hashed here, as each chunk arrives: hashing on a worker thread was measured and not kept
    // (adr/0054): more CPU per upload, no faster on the 2-core development machine.
    const hash = createHash("sha256");
    let size = 0;
    // One batch goes to disk while the next is read: at most two batches held per upload.
    let batch: Uint8Array[] = [];
    let batchBytes = 0;
    let writing: Promise<void> | undefined;
    // A write's failure, kept from the moment it happens: the write is awaited only when the
    // next batch is full, and a rejection nobody handles while the body is still arriving would
    // end the process (Node's default). Thrown at the next chunk instead, so the staging folder
    // is removed and the client is answered (test/unit/platform/files/upload.test.ts).
    let failed: { error: unknown } | undefined;
    try {
      for await (const chunk of body ? chunksOf(body) : []) {
        if (failed) throw failed.error;
        size += chunk.byteLength;
        if (size > maxBytes) throw new PayloadTooLarge(maxBytes);
        hash.update(chunk);
        batch.push(chunk);
        batchBytes += chunk.byteLength;
        if (batchBytes < WRITE_BATCH_BYTES) continue;
        await writing;
        writing = writer.write(batch);
        writing.catch((error: unknown) => {
          failed ??= { error };
        });
        batch = [];
        batchBytes = 0;
      }
      await writing;
      await writer.write(batch);
      return hash.digest("hex");
    } finally {
      // A failed read leaves a write in flight: settled before commit closes the file.
      await writing?.catch(() => undefined);
    }
  };
}

/**
 * A body's chunks. The request stream is not destroyed when the reading stops early (a body over
 * the limit): its connection still carries the 413, closed gracefully (http/lingering-close.ts).
 */
async function* chunksOf(body: Readable | ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  if (body instanceof Readable) {
    yield* body.iterator({ destroyOnReturn: false }) as AsyncIterable<Uint8Array>;
    return;
  }
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
