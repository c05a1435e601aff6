import { Worker } from "node:worker_threads";

/**
 * The hashing thread's program, plain CommonJS (a worker started with `eval` runs no tsx): one
 * SHA-256 per hash id, fed in message order, its hex digest posted back when asked.
 */
const WORKER_SOURCE = `
const { parentPort } = require("node:worker_threads");
const { createHash } = require("node:crypto");
const hashes = new Map();
parentPort.on("message", ({ id, chunks, end }) => {
  let hash = hashes.get(id);
  if (hash === undefined) hashes.set(id, (hash = createHash("sha256")));
  if (chunks) for (const chunk of chunks) hash.update(chunk);
  if (end === "digest") parentPort.postMessage({ id, digest: hash.digest("hex") });
  if (end !== undefined) hashes.delete(id);
});
`;

/** A SHA-256 computed on the shared hashing thread from chunks handed to it in order. */
export interface BackgroundSha256 {
  /**
   * Hands the chunks over. A chunk that alone owns its memory (a request body's chunk does) is
   * transferred, not copied, and is detached here: the caller must be done with it (written).
   */
  update(chunks: readonly Uint8Array[]): void;
  /** The hex digest of everything handed over; ends the hash. */
  digest(): Promise<string>;
  /** Ends the hash without a digest (a failed write). */
  discard(): void;
}

interface Waiter {
  resolve: (digest: string) => void;
  reject: (error: Error) => void;
}

/**
 * One thread per process, started on first use and not keeping the process alive. Why a thread:
 * SHA-256 of a 49 MiB upload is ≈ 45 ms of CPU, which on the main thread holds up every other
 * request and the upload's own reading (adr/0054). A thread that fails fails the hashes in
 * flight; the next hash starts a new one.
 */
let shared: { worker: Worker; waiting: Map<number, Waiter> } | undefined;
let nextId = 0;

function hashingThread(): NonNullable<typeof shared> {
  if (shared) return shared;
  const worker = new Worker(WORKER_SOURCE, { eval: true });
  worker.unref();
  const waiting = new Map<number, Waiter>();
  const current = { worker, waiting };
  worker.on("message", ({ id, digest }: { id: number; digest: string }) => {
    waiting.get(id)?.resolve(digest);
    waiting.delete(id);
  });
  const fail = (error: Error) => {
    if (shared === current) shared = undefined;
    for (const waiter of waiting.values()) waiter.reject(error);
    waiting.clear();
  };
  worker.on("error", fail);
  worker.on("exit", (code) => fail(new Error(`The hashing thread stopped (exit code ${code}).`)));
  shared = current;
  return current;
}

export function startSha256(): BackgroundSha256 {
  const thread = hashingThread();
  const id = nextId++;
  let ended = false;
  return {
    update(chunks) {
      if (ended) throw new Error("This hash has ended.");
      const sent = chunks.map(ownedCopy);
      thread.worker.postMessage(
        { id, chunks: sent },
        sent.map((chunk) => chunk.buffer as ArrayBuffer),
      );
    },
    digest() {
      if (ended) return Promise.reject(new Error("This hash has ended."));
      ended = true;
      return new Promise<string>((resolve, reject) => {
        thread.waiting.set(id, { resolve, reject });
        thread.worker.postMessage({ id, end: "digest" });
      });
    },
    discard() {
      if (ended) return;
      ended = true;
      thread.worker.postMessage({ id, end: "discard" });
    },
  };
}

/**
 * The chunk itself when it is the whole of a plain ArrayBuffer (transferable, so not copied);
 * otherwise a copy of its bytes alone. Posting a view of part of a buffer would copy, and detach
 * on transfer, the whole buffer: a Buffer from Node's shared pool, a slice of a larger body.
 */
function ownedCopy(chunk: Uint8Array): Uint8Array {
  const owned =
    chunk.byteOffset === 0 &&
    chunk.buffer instanceof ArrayBuffer &&
    chunk.byteLength === chunk.buffer.byteLength &&
    chunk.byteLength > 0;
  return owned ? chunk : chunk.slice();
}
