import { isPrincipalId } from "../../ids.ts";
import { isPersonalSourceName, isSourceName } from "../../sources/tool-names.ts";

// What one audit line may say, and the check that it says nothing else. The ledger records that a
// call happened and what Atrium decided, never what was in it: no argument values, no results, no
// secrets (adr/0037). The record type is closed and `checkAuditRecord` refuses any other key, so a
// caller that spreads a request into a record (`{...params}` with `arguments`) fails loudly in its
// tests instead of writing values to disk.

export type AuditPhase = "requested" | "decision" | "executed";
export type AuditDecision = "allowed" | "denied";
/** Which check of the call gate refused the call. */
export type DeniedBy =
  | "snapshot"
  | "schema"
  | "protocol"
  | "drift"
  | "scope"
  | "membership"
  | "credential"
  | "grant";

export const AUDIT_PHASES: readonly AuditPhase[] = ["requested", "decision", "executed"];
export const DENIED_BY: readonly DeniedBy[] = [
  "snapshot",
  "schema",
  "protocol",
  "drift",
  "scope",
  "membership",
  "credential",
  "grant",
];

/** What a caller records; the ledger stamps `seq` and `at`. */
export interface AuditRecord {
  /** The request id of the surface that asked (REST, MCP), for joining with the log. */
  requestId?: string;
  principalId: string;
  /** The connection's name: the `<source>` of `<source>__<tool>`. */
  connection: string;
  /** The upstream tool's name as the caller asked for it. */
  tool: string;
  phase: AuditPhase;
  /** On `decision` only. */
  decision?: AuditDecision;
  /** On a denied `decision` only, and always there. */
  deniedBy?: DeniedBy;
  /** Why, in Atrium's words (a check's name, a schema path), never a value from the call. */
  reason?: string;
  /** On `executed`: milliseconds from the gate's start to the result. */
  latencyMs?: number;
  /** On `executed` with a result: the size of its JSON in UTF-8 bytes. */
  resultBytes?: number;
  /** On `executed` with a result: `sha256:` and 64 hex over the same JSON. */
  resultDigest?: string;
  /** On `executed`: the result was an `isError` result, or the call threw. */
  isError?: boolean;
}

/** One line of the ledger. */
export interface AuditEntry extends AuditRecord {
  /** Per workspace, from 1, one more for each entry; never reused, also across restarts. */
  seq: number;
  /** ISO 8601 UTC, never earlier than the workspace's previous entry. */
  at: string;
}

const FIELDS = new Set<string>([
  "requestId",
  "principalId",
  "connection",
  "tool",
  "phase",
  "decision",
  "deniedBy",
  "reason",
  "latencyMs",
  "resultBytes",
  "resultDigest",
  "isError",
]);
export const MAX_TOOL_NAME_CHARS = 128;
export const MAX_REASON_CHARS = 200;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const DIGEST = /^sha256:[0-9a-f]{64}$/;
// A control, format (zero-width, bidi) or line/paragraph separator would let a line pretend to be
// two, or hide text from the admin who reads it.
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;
const INVISIBLE_RUNS = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]+/gu;
const ELLIPSIS = "…";

/**
 * `reason` as the ledger can hold it: each run of characters a line may not hold (a newline, a
 * tab, a zero-width or bidirectional control) made one space, and past `MAX_REASON_CHARS` cut at
 * a code point (never inside a surrogate pair) and ended with "…". The gate's refusal names the
 * connection, the tool and schema paths, so it can run past the limit; the caller is told it
 * whole and the ledger keeps its start, rather than refusing the entry and losing the decision
 * (test/unit/platform/connections/call-audit.test.ts "clips a long refusal").
 */
export function ledgerReason(reason: string): string {
  const line = reason.replace(INVISIBLE_RUNS, " ").trim();
  if (line.length <= MAX_REASON_CHARS) return line;
  let clipped = "";
  for (const codePoint of line) {
    if (clipped.length + codePoint.length + ELLIPSIS.length > MAX_REASON_CHARS) break;
    clipped += codePoint;
  }
  return `${clipped.trimEnd()}${ELLIPSIS}`;
}

/**
 * An entry as the ledger is read: a personal connection's (`my_…`) without a result's size or
 * digest, which an entry written before adr/0135 still holds on disk. Its result is its owner's
 * alone, and the workspace's admins, who read the ledger, could confirm a guess of it.
 */
export function shownEntry(entry: AuditEntry): AuditEntry {
  if (typeof entry.connection !== "string" || !isPersonalSourceName(entry.connection)) return entry;
  const { resultBytes: _bytes, resultDigest: _digest, ...shown } = entry;
  return shown;
}

/** An audit record with a field the ledger does not hold, or a field it holds with a wrong value. */
export class InvalidAuditRecord extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`Audit record refused: ${message}`);
    this.name = "InvalidAuditRecord";
  }
}

/**
 * The record as the ledger writes it: its known fields in a fixed order, an `undefined` optional
 * dropped. Throws `InvalidAuditRecord` naming the first field that is wrong; `seq` and `at` are
 * the ledger's to stamp and are refused like any other unknown key.
 */
export function checkAuditRecord(record: AuditRecord): AuditRecord {
  if (typeof record !== "object" || record === null || Array.isArray(record)) {
    throw new InvalidAuditRecord("record", "an audit record is an object.");
  }
  for (const key of Object.keys(record)) {
    if (!FIELDS.has(key)) {
      throw new InvalidAuditRecord(
        key,
        `"${key.slice(0, 40)}" is not an audit field; the ledger records who called which tool and what was decided, never arguments, results or secrets.`,
      );
    }
  }
  const r = record as unknown as Record<string, unknown>;
  const text = (field: string, max: number): string | undefined => {
    const value = r[field];
    if (value === undefined) return undefined;
    if (typeof value !== "string" || value.length === 0 || value.length > max || INVISIBLE.test(value)) {
      throw new InvalidAuditRecord(field, `${field} is one line of 1 to ${max} visible characters.`);
    }
    return value;
  };
  const count = (field: string, integer: boolean): number | undefined => {
    const value = r[field];
    if (value === undefined) return undefined;
    if (
      typeof value !== "number" ||
      !Number.isFinite(value) ||
      value < 0 ||
      (integer && !Number.isInteger(value))
    ) {
      throw new InvalidAuditRecord(field, `${field} is a ${integer ? "whole " : ""}number, 0 or more.`);
    }
    return value;
  };

  const requestId = r.requestId;
  if (requestId !== undefined && (typeof requestId !== "string" || !REQUEST_ID.test(requestId))) {
    throw new InvalidAuditRecord("requestId", "requestId is 1 to 128 letters, digits, '.', '_', ':' or '-'.");
  }
  if (typeof r.principalId !== "string" || !isPrincipalId(r.principalId)) {
    throw new InvalidAuditRecord("principalId", "principalId is a principal id (usr_ and 24 hex).");
  }
  if (typeof r.connection !== "string" || !isSourceName(r.connection)) {
    throw new InvalidAuditRecord("connection", "connection is a connection's name (a source name).");
  }
  const tool = text("tool", MAX_TOOL_NAME_CHARS);
  if (tool === undefined) throw new InvalidAuditRecord("tool", "tool is required.");
  const phase = r.phase as AuditPhase;
  if (!AUDIT_PHASES.includes(phase)) {
    throw new InvalidAuditRecord("phase", `phase is one of ${AUDIT_PHASES.join(", ")}.`);
  }
  const decision = r.decision as AuditDecision | undefined;
  const deniedBy = r.deniedBy as DeniedBy | undefined;
  const reason = text("reason", MAX_REASON_CHARS);
  const latencyMs = count("latencyMs", false);
  const resultBytes = count("resultBytes", true);
  const resultDigest = r.resultDigest as string | undefined;
  const isError = r.isError as boolean | undefined;

  // Which fields each phase carries, so a line means one thing.
  const only = (allowed: readonly string[]): void => {
    for (const [field, value] of Object.entries({
      decision,
      deniedBy,
      reason,
      latencyMs,
      resultBytes,
      resultDigest,
      isError,
    })) {
      if (value !== undefined && !allowed.includes(field)) {
        throw new InvalidAuditRecord(field, `a ${phase} entry has no ${field}.`);
      }
    }
  };
  if (phase === "requested") only([]);
  if (phase === "decision") {
    only(["decision", "deniedBy", "reason"]);
    if (decision !== "allowed" && decision !== "denied") {
      throw new InvalidAuditRecord("decision", 'a decision entry says "allowed" or "denied".');
    }
    if (decision === "denied" && !DENIED_BY.includes(deniedBy as DeniedBy)) {
      throw new InvalidAuditRecord("deniedBy", `a denial names its check: one of ${DENIED_BY.join(", ")}.`);
    }
    if (decision === "allowed" && deniedBy !== undefined) {
      throw new InvalidAuditRecord("deniedBy", "an allowed call has no deniedBy.");
    }
  }
  if (phase === "executed") {
    only(["latencyMs", "resultBytes", "resultDigest", "isError", "reason"]);
    if (latencyMs === undefined)
      throw new InvalidAuditRecord("latencyMs", "an executed entry has latencyMs.");
    if (typeof isError !== "boolean") throw new InvalidAuditRecord("isError", "isError is true or false.");
    if (resultDigest !== undefined && (typeof resultDigest !== "string" || !DIGEST.test(resultDigest))) {
      throw new InvalidAuditRecord("resultDigest", "resultDigest is sha256: and 64 lowercase hex.");
    }
    if ((resultBytes === undefined) !== (resultDigest === undefined)) {
      throw new InvalidAuditRecord("resultBytes", "resultBytes and resultDigest come together.");
    }
  }

  const checked: AuditRecord = {
    ...(requestId === undefined ? {} : { requestId }),
    principalId: r.principalId,
    connection: r.connection,
    tool,
    phase,
    ...(decision === undefined ? {} : { decision }),
    ...(deniedBy === undefined ? {} : { deniedBy }),
    ...(reason === undefined ? {} : { reason }),
    ...(latencyMs === undefined ? {} : { latencyMs }),
    ...(resultBytes === undefined ? {} : { resultBytes }),
    ...(resultDigest === undefined ? {} : { resultDigest }),
    ...(isError === undefined ? {} : { isError }),
  };
  return checked;
}
