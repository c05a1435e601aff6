import { equalSecrets, hashSecret } from "../crypto/secrets.ts";
import type { GrantRecord, RefreshRequest } from "./grant-record.ts";
import { consentOf, type Standing, standingRefusal } from "./grant-standing.ts";
import { newRefreshToken } from "./grant-tokens.ts";
import { OAuthError } from "./oauth-error.ts";
import { graceAnswer, sealSuccessor } from "./refresh-grace.ts";

/** Rotated-out refresh hashes kept for replay detection; older ones are simply unknown. */
const MAX_PREVIOUS_REFRESH_HASHES = 100;
/** Every refresh token refused as unknown, reused or not this client's: one answer, which tells nothing. */
export const REFRESH_REFUSED = "The refresh token is invalid, expired or revoked; authorize again.";

/**
 * What a refresh token presented to its grant is answered, decided on the record as read under
 * the grant's lock (Grants.refresh carries it out):
 * - `refuse`: the grant revoked first when `revoke` (a rotated-out token came back, so two
 *   parties hold the family, OAuth 2.1 §4.3.1; or its person's standing is gone), `warning` logged;
 * - `resend`: the token just replaced, from its own client within the grace, gets the same
 *   successor again and nothing is written (refresh-grace.ts, ADR 0136);
 * - `rotate`: the current token, exchanged for a new one (`rotate`).
 */
export type RefreshVerdict =
  | Refusal
  | { kind: "resend"; refreshToken: string; scopes: string[] }
  | { kind: "rotate"; presented: string; replaced: string; scopes: string[] };

interface Refusal {
  kind: "refuse";
  error: OAuthError;
  revoke?: true;
  warning?: string;
}

export interface RefreshContext {
  standing: Standing;
  /** The workspace's MCP URL now (Grants.audienceOf). */
  resource: string;
  now: number;
  /** `oauth.refreshReuseGraceSeconds` in ms; 0 never. */
  graceMs: number;
}

/** The verdict on `token` for `record`, a grant not revoked; throws nothing. */
export function judgeRefresh(
  record: GrantRecord,
  token: string,
  request: RefreshRequest,
  { standing, resource, now, graceMs }: RefreshContext,
): RefreshVerdict {
  const refuse = (message = REFRESH_REFUSED): Refusal => ({
    kind: "refuse",
    error: new OAuthError("invalid_grant", message),
  });
  const hash = hashSecret(token);
  const replaced = record.currentRefreshHash;
  const current = replaced !== undefined && equalSecrets(hash, replaced);
  // The token just replaced, retried by its client within the grace: its successor, once more.
  const grace = current
    ? undefined
    : graceAnswer(record, { token, clientId: request.clientId }, now, graceMs);
  if (grace === "clockBehind") {
    // A clock stepped back is not a thief: refused, and the family lives (ADR 0136).
    return {
      ...refuse(),
      warning:
        "the refresh token just replaced came back while the clock reads before its rotation (stepped back?); refused without revoking the grant",
    };
  }
  const again = grace?.successor;
  if (replaced === undefined || (!current && again === undefined)) {
    if (!record.previousRefreshHashes.some((previous) => equalSecrets(hash, previous))) return refuse();
    return {
      ...refuse(),
      revoke: true,
      warning: "a rotated-out refresh token was presented again; the grant is revoked",
    };
  }
  if (record.clientId !== request.clientId) return refuse();
  if (record.absoluteExpiresAt <= now) {
    return refuse("This access has reached the end of its lifetime; authorize again.");
  }
  // Not left to the revocation that leaving and deactivation make: a grant that missed it
  // (made in the middle of it) ends here, and is revoked so that rejoining cannot revive it.
  const refusal = standingRefusal(standing, record.principalId, record.workspaceId, consentOf(record));
  if (refusal !== undefined) return { ...refuse(refusal), revoke: true };
  // RFC 8707: a client that names the resource names this workspace's URL, now or as consented.
  if (
    request.resource !== undefined &&
    request.resource !== resource &&
    request.resource !== record.resource
  ) {
    return {
      kind: "refuse",
      error: new OAuthError("invalid_target", "The resource is not the one this access was granted for."),
    };
  }
  const scopes = request.scopes ?? record.scopes;
  const wider = scopes.find((scope) => !record.scopes.includes(scope));
  if (wider !== undefined) {
    return {
      kind: "refuse",
      error: new OAuthError(
        "invalid_scope",
        `The scope "${wider}" was not granted; a refresh can only narrow scopes.`,
      ),
    };
  }
  return again === undefined
    ? { kind: "rotate", presented: token, replaced, scopes }
    : { kind: "resend", refreshToken: again, scopes };
}

/**
 * Rotates the grant's refresh token in `record` (written by the caller): the token replaced joins
 * the rotated-out hashes, and with a grace the successor is sealed under the token presented.
 */
export function rotate(
  record: GrantRecord,
  { presented, replaced }: { presented: string; replaced: string },
  now: number,
  withGrace: boolean,
): string {
  record.previousRefreshHashes = [replaced, ...record.previousRefreshHashes].slice(
    0,
    MAX_PREVIOUS_REFRESH_HASHES,
  );
  const refreshToken = issueRefreshToken(record);
  if (withGrace) record.successorSealed = sealSuccessor(presented, refreshToken);
  else delete record.successorSealed;
  record.refreshedAt = now;
  return refreshToken;
}

/** A new refresh token of the grant, its hash made the record's current one. */
export function issueRefreshToken(record: GrantRecord): string {
  const { token, hash } = newRefreshToken(record.grantId);
  record.currentRefreshHash = hash;
  return token;
}

/** Whether `token` is, or was, one of the grant's refresh tokens (RFC 7009 revokes only those). */
export function isOfFamily(record: GrantRecord, token: string): boolean {
  const hash = hashSecret(token);
  return [record.currentRefreshHash, ...record.previousRefreshHashes].some(
    (stored) => stored !== undefined && equalSecrets(hash, stored),
  );
}
