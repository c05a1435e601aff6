import { createHash } from "node:crypto";
import { performance } from "node:perf_hooks";
import { ProtocolError, SdkError } from "@modelcontextprotocol/client";
import { AtriumError } from "../../errors.ts";
import { SourceRetired } from "../../sources/mcp-source.ts";
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
export type AuditAppender = Pick<AuditLedger, "append">;

export interface AuditCallOptions {
  /** Milliseconds on a monotonic scale for the latency; `performance.now` unless a test moves it. */
  now?: () => number;
  /**
   * The result is one person's alone (a personal connection's): `executed` says whether it was an
   * error, never its size or digest, which would let an admin confirm a guess of it (adr/0135).
   */
  privateResult?: boolean;
}

export function isDenial(outcome: unknown): outcome is Denial {
  return typeof outcome === "object" && outcome !== null && DENIAL in outcome;
}

/**
 * Audits one call through the gate: `requested` before `gate` runs, then the gate's `decision`
 * and, when it allowed the call, `executed` with the latency, the size and digest of the result's
 * JSON (not for a `privateResult`) and whether it is an error result. `gate` answers a `deny(by, reason)` or nothing; only
 * then is `forward` run, and its result is returned unchanged. Generic over the result, so the
 * same helper audits a `CallToolResult` or a task's output.
 *
 * `decision: allowed` is written once the gate passed and before `forward` runs, so a call the
 * server answers with a JSON-RPC error, or whose transport fails, is on record as allowed and
 * then as failed (adr/0090; test/integration/connections.test.ts "JSON-RPC error"). A step that
 * throws gets an `executed` entry with `isError` and `threw <code>` (`thrownCode`), never the
 * error's message, which may quote the call, and the error is thrown on; `latencyMs` covers the
 * gate and the call. A ledger that cannot write fails the call: `requested` is written before
 * anything is sent, and an unauditable call is not made (adr/0037).
 */
export async function auditCall<R>(
  ledger: AuditAppender,
  base: AuditedCall,
  gate: () => Promise<Denial | undefined>,
  forward: () => Promise<R>,
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
  const threw = async (error: unknown): Promise<never> => {
    await ledger.append(workspaceId, {
      ...call,
      phase: "executed",
      latencyMs: elapsed(startedMs, now()),
      isError: true,
      reason: `threw ${thrownCode(error)}`,
    });
    throw error;
  };
  const denial = await gate().catch(threw);
  if (denial) {
    await ledger.append(workspaceId, {
      ...call,
      phase: "decision",
      decision: "denied",
      deniedBy: denial.denied,
      reason: ledgerReason(denial.reason),
    });
    return denial;
  }
  await ledger.append(workspaceId, { ...call, phase: "decision", decision: "allowed" });
  const result = await forward().catch(threw);
  await ledger.append(workspaceId, {
    ...call,
    phase: "executed",
    latencyMs: elapsed(startedMs, now()),
    ...(options.privateResult ? { isError: isErrorResult(result) } : measureResult(result)),
  });
  return result;
}

/**
 * What the ledger says a thrown error was, by its kind alone: an Atrium error's code;
 * `protocol_error` when the server answered a JSON-RPC error; `transport_error` when the MCP
 * client could not send the call or hear its answer (an HTTP failure, a closed connection, a
 * timeout); `source_closed` when the call reached a client closed for good (a swap, a disable)
 * before anything was sent; else `unexpected_error`.
 */
function thrownCode(error: unknown): string {
  if (error instanceof AtriumError) return error.code;
  if (error instanceof SourceRetired) return "source_closed";
  if (error instanceof ProtocolError) return "protocol_error";
  if (error instanceof SdkError) return "transport_error";
  return "unexpected_error";
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
    isError: isErrorResult(result),
  };
}

function isErrorResult(result: unknown): boolean {
  return typeof result === "object" && result !== null && (result as { isError?: unknown }).isError === true;
}

function elapsed(fromMs: number, toMs: number): number {
  // Rounded to a microsecond: the ledger needs no more, and a line stays short.
  return Math.max(0, Math.round((toMs - fromMs) * 1000) / 1000);
}
