// The shapes of the ids every layer checks before it trusts one, storage included: a leaf module,
// so the bottom layer need not import the identity or workspace modules that mint them.
import { randomBytes } from "node:crypto";

const WORKSPACE_ID = /^ws_[0-9a-f]{16}$/;
const PRINCIPAL_ID = /^usr_[0-9a-f]{24}$/;

export function newWorkspaceId(): string {
  return `ws_${randomBytes(8).toString("hex")}`;
}

export function isWorkspaceId(value: string): boolean {
  return WORKSPACE_ID.test(value);
}

// An id drawn at random and compared only for equality: a prefix naming its kind and 128 bits in
// lowercase hex. Random, not counted: a count kept in a file a backup can restore goes back with it
// and hands a number out again (ADR 0169, amended later and later still).
const RANDOM_ID_BYTES = 16;

/** A new `<prefix>_` id of 128 random bits: `newRandomId("mbs")` is `mbs_` and 32 hex digits. */
export function newRandomId(prefix: string): string {
  return `${prefix}_${randomBytes(RANDOM_ID_BYTES).toString("hex")}`;
}

/** Whether `value` has the shape `newRandomId(prefix)` gives: the prefix, `_` and 32 lowercase hex. */
export function isRandomId(prefix: string, value: unknown): value is string {
  return (
    typeof value === "string" &&
    value.length === prefix.length + 1 + RANDOM_ID_BYTES * 2 &&
    value.startsWith(`${prefix}_`) &&
    /^[0-9a-f]+$/.test(value.slice(prefix.length + 1))
  );
}

/** A principal id is minted by identity/principal.ts (a digest of issuer and subject). */
export function isPrincipalId(value: string): boolean {
  return PRINCIPAL_ID.test(value);
}

// An owned record's id: a short lowercase prefix naming its kind (`fl_`, `nt_`…) and random hex.
const RECORD_ID = /^[a-z]{2,4}_[0-9a-f]{16,32}$/;

/** The grammar of every record id in an owner partition (storage/paths.ts `recordDir`, storage/owned-records.ts). */
export function isRecordId(value: string): boolean {
  return RECORD_ID.test(value);
}
