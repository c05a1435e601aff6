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
