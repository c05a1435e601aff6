import { createHash } from "node:crypto";
import { Conflict, InvalidInput } from "../../errors.ts";
import type { Clock } from "../../kernel/clock.ts";
import type { Run } from "./model.ts";

/** An `Idempotency-Key` is 1 to 255 visible ASCII characters (the IETF draft's sf-string, bounded). */
const KEY = /^[\x21-\x7e]{1,255}$/;

/**
 * What a key remembers: only what a replay needs. Not the run: its input can be megabytes, and a
 * window of 24 h of starts held 200 MB for 5 runs kept (idempotency.test.ts "remembers the id").
 */
interface Remembered {
  bodyDigest: string;
  expiresAtMs: number;
  /** The id of the run the key started; a promise while that start is still being written. */
  runId: Promise<string>;
}

/** What `once` did: started a run now, or found the id of the run the key started before. */
export type KeyedStart = { started: Run } | { replayOf: string };

/** Two starts with one key and different bodies: the second is refused, never run. */
export class IdempotencyConflict extends Conflict {
  constructor() {
    super(
      "idempotency_conflict",
      "This Idempotency-Key was used with a different body: send a new key for a different run.",
    );
  }
}

export function checkIdempotencyKey(key: string): string {
  if (!KEY.test(key)) throw new InvalidInput("Idempotency-Key is 1 to 255 visible ASCII characters.");
  return key;
}

/** A digest of a start's body that does not depend on the order of its keys. */
export function bodyDigest(body: unknown): string {
  return createHash("sha256").update(canonicalJson(body)).digest("hex");
}

/**
 * The run starts made with an `Idempotency-Key`, per task and per person who sent it, for the
 * configured window. The same key and body answers the run it started (even while that start is
 * still being written, so two racing requests make one run); the same key with another body is
 * `409 idempotency_conflict`. One per loaded workspace, rebuilt from its runs, which keep their
 * key and digest, when they are read (ADR 0056).
 */
export class IdempotencyKeys {
  private readonly keys = new Map<string, Remembered>();
  /** The key each remembered run was started with, so a run removed takes its key with it. */
  private readonly keyOfRun = new Map<string, string>();

  constructor(
    private readonly clock: Clock,
    private readonly windowMs: number,
  ) {}

  /**
   * The id of the run this key already started, or, when it is new (or expired), the run `start`
   * starts now, remembered under the key. A replay reads its run afresh by the id.
   */
  once(
    scope: { taskId: string; principalId: string },
    key: string,
    digest: string,
    start: (expiresAtMs: number) => Promise<Run>,
  ): Promise<KeyedStart> {
    const id = `${scope.taskId}\n${scope.principalId}\n${key}`;
    const now = this.clock();
    const known = this.keys.get(id);
    if (known && known.expiresAtMs > now) {
      if (known.bodyDigest !== digest) return Promise.reject(new IdempotencyConflict());
      return known.runId.then((runId) => ({ replayOf: runId }));
    }
    const expiresAtMs = now + this.windowMs;
    const started = start(expiresAtMs);
    const runId = started.then((run) => run.id);
    const entry: Remembered = { bodyDigest: digest, expiresAtMs, runId };
    this.keys.set(id, entry);
    runId.then(
      (run) => {
        if (this.keys.get(id) === entry) this.keyOfRun.set(run, id);
      },
      // A start that was refused (a concurrency limit, bad input) made no run: the key is free again.
      () => {
        if (this.keys.get(id) === entry) this.keys.delete(id);
      },
    );
    this.prune(now);
    return started.then((run) => ({ started: run }));
  }

  /** Remembers a stored run's key when the workspace's runs are read: its id, digest and expiry. */
  restore(run: Pick<Run, "id" | "taskId" | "startedBy" | "idempotency">): void {
    if (!run.idempotency) return;
    const expiresAtMs = Date.parse(run.idempotency.expiresAt);
    if (!(expiresAtMs > this.clock())) return;
    const id = `${run.taskId}\n${run.startedBy}\n${run.idempotency.key}`;
    this.keys.set(id, {
      bodyDigest: run.idempotency.bodyDigest,
      expiresAtMs,
      runId: Promise.resolve(run.id),
    });
    this.keyOfRun.set(run.id, id);
  }

  /** Drops the keys of runs that are removed (pruned, or with their task): the key is free again. */
  forget(runIds: Iterable<string>): void {
    for (const runId of runIds) {
      const id = this.keyOfRun.get(runId);
      if (id !== undefined) this.keys.delete(id);
      this.keyOfRun.delete(runId);
    }
  }

  private prune(now: number): void {
    for (const [id, entry] of this.keys) if (entry.expiresAtMs <= now) this.keys.delete(id);
    for (const [runId, id] of this.keyOfRun) if (!this.keys.has(id)) this.keyOfRun.delete(runId);
  }
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
