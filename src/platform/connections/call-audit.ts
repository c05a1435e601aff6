import { createHash } from "node:crypto";
import { performance } from "node:perf_hooks";
import { AtriumError } from "../../errors.ts";
import type { AuditLedger } from "./audit.ts";
import { type AuditRecord, type DeniedBy, ledgerReason } from "./audit-entry.ts";

// Marks a denial made by `deny`. A remote server's result is parsed from JSON, which cannot carry
// a symbol key, so a result that happens to have `denied` and `reason` keys is never taken for the
// gate's answer (test/unit/platform/connections/call-audit.test.ts "looks like a denial").
const DENIAL: unique symbol = Symbol("atrium.denial");

/** What the call gate answers instead of a result when one of its checks refuses the call. */
export interface Denial {
  readonly [DENIAL]: true;
  denied: DeniedBy;
  /**
   * Atrium's words, never a value from the call: told whole to the caller, and to the ledger as
   * one line clipped to its limit (`ledgerReason`).
   */
  reason: string;
}

/** The gate's refusal: which check refused, and why in Atrium's words. */
export function deny(by: DeniedBy, reason: string): Denial {
  return { [DENIAL]: true, denied: by, reason };
}

/** Who called which tool of which connection, in which workspace: what every entry of one call shares. */
export interface AuditedCall extends Pick<AuditRecord, "requestId" | "principalId" | "connection" | "tool"> {
  workspaceId: string;
}

/** The ledger as the helper uses it, so a test or the gate can pass a stand-in. */
export type AuditAppender = Pick<AuditLedger, "append" | "appendAll">;

export interface AuditCallOptions {
  /** Milliseconds on a monotonic scale for the latency; `performance.now` unless a test moves it. */
  now?: () => number;
}

export function isDenial(outcome: unknown): outcome is Denial {
  return typeof outcome === "object" && outcome !== null && DENIAL in outcome;
}

/**
 * Audits one call through the gate: `requested` before `run`, then the gate's `decision` and, when
 * it allowed the call, `executed` with the latency, the size and digest of the result's JSON and
 * whether it is an error result. `run` is the gate and the call in one: it answers a `deny(by, reason)` or
 * the result, which is returned unchanged. Generic over the result, so the same helper audits a
 * `CallToolResult` or a task's output.
 *
 * The decision is written after `run` returns, so its `at` is the end of the call; `latencyMs`
 * covers the gate and the call. A `run` that throws gets an `executed` entry with `isError` and
 * the error's code (never its message, which may quote the call), and the error is thrown on.
 * A ledger that cannot write fails the call: `requested` is written before anything is sent, and
 * an unauditable call is not made (adr/0037).
 */
export async function auditCall<R>(
  ledger: AuditAppender,
  base: AuditedCall,
  run: () => Promise<Denial | R>,
  options: AuditCallOptions = {},
): Promise<Denial | R> {
  const now = options.now ?? (() => performance.now());
  const { workspaceId } = base;
  const call: Omit<AuditedCall, "workspaceId"> = {
    ...(base.requestId === undefined ? {} : { requestId: base.requestId }),
    principalId: base.principalId,
    connection: base.connection,
    tool: base.tool,
  };
  await ledger.append(workspaceId, { ...call, phase: "requested" });
  const startedMs = now();
  let outcome: Denial | R;
  try {
    outcome = await run();
  } catch (error) {
    await ledger.append(workspaceId, {
      ...call,
      phase: "executed",
      latencyMs: elapsed(startedMs, now()),
      isError: true,
      reason: `threw ${error instanceof AtriumError ? error.code : "unexpected_error"}`,
    });
    throw error;
  }
  const latencyMs = elapsed(startedMs, now());
  if (isDenial(outcome)) {
    await ledger.append(workspaceId, {
      ...call,
      phase: "decision",
      decision: "denied",
      deniedBy: outcome.denied,
      reason: ledgerReason(outcome.reason),
    });
    return outcome;
  }
  await ledger.appendAll(workspaceId, [
    { ...call, phase: "decision", decision: "allowed" },
    { ...call, phase: "executed", latencyMs, ...measureResult(outcome) },
  ]);
  return outcome;
}

/** The size and digest of a result's JSON, and whether it says `isError: true`. */
export function measureResult(result: unknown): {
  resultBytes: number;
  resultDigest: string;
  isError: boolean;
} {
  const json = Buffer.from(JSON.stringify(result) ?? "null", "utf8");
  return {
    resultBytes: json.length,
    resultDigest: `sha256:${createHash("sha256").update(json).digest("hex")}`,
    isError:
      typeof result === "object" && result !== null && (result as { isError?: unknown }).isError === true,
  };
}

function elapsed(fromMs: number, toMs: number): number {
  // Rounded to a microsecond: the ledger needs no more, and a line stays short.
  return Math.max(0, Math.round((toMs - fromMs) * 1000) / 1000);
}
