import { Worker } from "node:worker_threads";

/**
 * The hashing thread's program, plain CommonJS (a worker started with `eval` runs no tsx): one
 * SHA-256 per hash id, fed in message order; each update is acknowledged once hashed, and the
 * hex digest posted back when asked.
 */
const WORKER_SOURCE = `
const { parentPort } = require("node:worker_threads");
const { createHash } = require("node:crypto");
const hashes = new Map();
parentPort.on("message", ({ id, chunks, end }) => {
  let hash = hashes.get(id);
  if (hash === undefined) hashes.set(id, (hash = createHash("sha256")));
  if (chunks) {
    for (const chunk of chunks) hash.update(chunk);
    parentPort.postMessage({ id });
  }
  if (end === "digest") parentPort.postMessage({ id, digest: hash.digest("hex") });
  if (end === "discard") parentPort.postMessage({ id, discarded: true });
  if (end !== undefined) hashes.delete(id);
});
`;

/** A SHA-256 computed on the shared hashing thread from chunks handed to it in order. */
export interface BackgroundSha256 {
  /**
   * Hands the chunks over; resolves once the thread has hashed them, so a caller can bound how
   * far hashing lags behind. A chunk that alone owns its memory (a request body's chunk does)
   * is transferred, not copied, and is detached here: the caller must be done with it (written).
   */
  update(chunks: readonly Uint8Array[]): Promise<void>;
  /** The hex digest of everything handed over; ends the hash. */
  digest(): Promise<string>;
  /** Ends the hash without a digest (a failed write). */
  discard(): void;
}

interface Waiter {
  resolve: (digest: string) => void;
  reject: (error: Error) => void;
}

/** Per hash: its updates not yet acknowledged, oldest first, and its digest once asked. */
interface Waiting {
  updates: Waiter[];
  digest?: Waiter;
}

interface HashingThread {
  worker: Worker;
  waiting: Map<number, Waiting>;
  /** Set when the thread has failed: a hash started on it fails at once instead of waiting. */
  failed?: Error;
}

/**
 * One thread per process, started on first use and not keeping the process alive. Why a thread:
 * SHA-256 of a 49 MiB upload is ≈ 45 ms of CPU, which on the main thread holds up every other
 * request and the upload's own reading (adr/0054). A thread that fails fails the hashes in
 * flight; the next hash starts a new one.
 */
let shared: HashingThread | undefined;
let nextId = 0;

function hashingThread(): HashingThread {
  if (shared) return shared;
  const worker = new Worker(WORKER_SOURCE, { eval: true });
  worker.unref();
  const waiting = new Map<number, Waiting>();
  const current: HashingThread = { worker, waiting };
  worker.on("message", ({ id, digest, discarded }: { id: number; digest?: string; discarded?: true }) => {
    const hash = waiting.get(id);
    if (hash === undefined) return;
    if (digest !== undefined) hash.digest?.resolve(digest);
    else if (discarded === undefined) hash.updates.shift()?.resolve("");
    if (digest !== undefined || discarded) waiting.delete(id);
  });
  const fail = (error: Error) => {
    if (shared === current) shared = undefined;
    current.failed ??= error;
    for (const hash of waiting.values())
      for (const waiter of [...hash.updates, ...(hash.digest ? [hash.digest] : [])]) waiter.reject(error);
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
  const waiting: Waiting = { updates: [] };
  thread.waiting.set(id, waiting);
  let ended = false;
  return {
    update(chunks) {
      if (ended) throw new Error("This hash has ended.");
      if (thread.failed) return Promise.reject(thread.failed);
      const sent = chunks.map(ownedCopy);
      const hashed = new Promise<void>((resolve, reject) => {
        waiting.updates.push({ resolve: () => resolve(), reject });
      });
      // A caller that stops waiting (a failed upload) must not turn a failed thread into an
      // unhandled rejection; one that waits still gets the error.
      hashed.catch(() => undefined);
      thread.worker.postMessage(
        { id, chunks: sent },
        sent.map((chunk) => chunk.buffer as ArrayBuffer),
      );
      return hashed;
    },
    digest() {
      if (ended) return Promise.reject(new Error("This hash has ended."));
      ended = true;
      if (thread.failed) return Promise.reject(thread.failed);
      return new Promise<string>((resolve, reject) => {
        waiting.digest = { resolve, reject };
        thread.worker.postMessage({ id, end: "digest" });
      });
    },
    discard() {
      if (ended) return;
      ended = true;
      // The entry goes once the thread confirms, after it has acknowledged the updates before.
      if (!thread.failed) thread.worker.postMessage({ id, end: "discard" });
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
