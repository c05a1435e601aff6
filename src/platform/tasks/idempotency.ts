import { createHash } from "node:crypto";
import { Conflict, InvalidInput } from "../../errors.ts";
import type { Clock } from "../../kernel/clock.ts";
import type { Run } from "./model.ts";

/** An `Idempotency-Key` is 1 to 255 visible ASCII characters (the IETF draft's sf-string, bounded). */
const KEY = /^[\x21-\x7e]{1,255}$/;

interface Remembered {
  bodyDigest: string;
  expiresAtMs: number;
  /** The run the key started; a promise while that start is still being written. */
  run: Promise<Run>;
}

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

  constructor(
    private readonly clock: Clock,
    private readonly windowMs: number,
  ) {}

  /**
   * The run this key already started, or undefined when it is new (or expired): then `start`
   * is called now and its run remembered under the key.
   */
  once(
    scope: { taskId: string; principalId: string },
    key: string,
    digest: string,
    start: (expiresAtMs: number) => Promise<Run>,
  ): Promise<Run> {
    const id = `${scope.taskId}\n${scope.principalId}\n${key}`;
    const now = this.clock();
    const known = this.keys.get(id);
    if (known && known.expiresAtMs > now) {
      if (known.bodyDigest !== digest) return Promise.reject(new IdempotencyConflict());
      return known.run;
    }
    const expiresAtMs = now + this.windowMs;
    const run = start(expiresAtMs);
    this.keys.set(id, { bodyDigest: digest, expiresAtMs, run });
    // A start that was refused (a concurrency limit, bad input) made no run: the key is free again.
    run.catch(() => {
      if (this.keys.get(id)?.run === run) this.keys.delete(id);
    });
    this.prune(now);
    return run;
  }

  /**
   * Remembers a stored run's key when the workspace's runs are read. Its result is not kept: it
   * can be as large as `tasks.inlineResultBytes`, and a replay reads the run afresh anyway.
   */
  restore(run: Run): void {
    if (!run.idempotency) return;
    const expiresAtMs = Date.parse(run.idempotency.expiresAt);
    if (!(expiresAtMs > this.clock())) return;
    const { result: _result, ...kept } = run;
    this.keys.set(`${run.taskId}\n${run.startedBy}\n${run.idempotency.key}`, {
      bodyDigest: run.idempotency.bodyDigest,
      expiresAtMs,
      run: Promise.resolve(kept),
    });
  }

  private prune(now: number): void {
    for (const [id, entry] of this.keys) if (entry.expiresAtMs <= now) this.keys.delete(id);
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
