import { hashSecret, randomSecret } from "../crypto/secrets.ts";
import { type Clock, systemClock } from "../kernel/clock.ts";
import type { Logger } from "../log.ts";
import { CorruptJson } from "../storage/atomic.ts";
import { KeyedLock } from "../storage/keyed-lock.ts";
import type { StorageLayout } from "../storage/paths.ts";
import { JsonRecords } from "../storage/records.ts";
import { newGrantId } from "./grant-tokens.ts";
import type { Grants } from "./grants.ts";
import { OAuthError } from "./oauth-error.ts";

/** How long an authorization code can be redeemed. */
export const CODE_TTL_MS = 60_000;
/** How long a redeemed code is remembered, so a late replay still revokes what it issued. */
export const REDEEMED_CODE_KEPT_MS = 10 * 60_000;
// A caller-chosen code (the consent page's) must be as unguessable as a generated one.
const CODE = /^[A-Za-z0-9_-]{32,128}$/;
const REFUSED = "The authorization code is invalid, expired or already used.";

/** What a person approved, bound to the code that carries it to the token endpoint. */
export interface CodeGrant {
  clientId: string;
  redirectUri: string;
  /** The authorization request left redirect_uri out, so the token request may too. */
  redirectUriOmitted?: boolean;
  codeChallenge: string;
  scopes: string[];
  resource: string;
  principalId: string;
  /**
   * The person's standing id when they approved, read before the check that they are not
   * deactivated: a deactivation since (and the reactivation after it) refuses the exchange
   * (ADR 0169, amended later still). Absent in codes stored before it was kept, and when the person
   * held none. Not part of what makes an approval submitted twice the same one: the first code,
   * with its id, is what is answered.
   */
  standingId?: string;
  /**
   * The id of the person's membership of the resource's workspace when they approved, read
   * before the check that they are a member: a removal and a re-add since refuse the exchange
   * (ADR 0169, amended). Absent in codes stored before it was kept, when their membership holds
   * none (added before it was kept: judged by its stamp), and when they were not a member as it
   * was read (the check refuses it, and a join since draws an id the code does not hold). Not part
   * of what makes an approval submitted twice the same one, as `standingId`.
   */
  membershipId?: string;
}

/** A code on disk, named by the SHA-256 of the code. Times are epoch ms. */
interface StoredCode {
  grant: CodeGrant;
  expiresAt: number;
  redeemedAt?: number;
  /** The grant the redemption started; revoked if the code comes back. */
  grantId?: string;
}

export interface RedeemedCode {
  grant: CodeGrant;
  /** When the code was issued, that is when the person approved; epoch ms. */
  issuedAt: number;
  /** The id the grant this redemption starts must be created under. */
  grantId: string;
}

/**
 * Authorization codes in `oauth/codes`, stored only as hashes. A code is good for one
 * redemption within CODE_TTL_MS; a second redemption is refused and revokes the grant the
 * first one started (OAuth 2.1 §4.1.3). A redemption whose grant was never stored (its write
 * failed) did not count: the code is redeemed again, for the same grant id.
 */
export class AuthorizationCodes {
  private readonly records: JsonRecords<StoredCode>;
  private readonly locks = new KeyedLock();

  constructor(
    layout: StorageLayout,
    private readonly grants: Pick<Grants, "revoke" | "get">,
    private readonly log: Logger,
    private readonly clock: Clock = systemClock,
  ) {
    this.records = new JsonRecords(layout, "oauth/codes");
  }

  /**
   * Stores a code for `grant` and returns it: a fresh random one, or `code` when the caller
   * derives its own (so an approval submitted twice yields one code). Issuing a stored code
   * again with the identical grant changes nothing.
   */
  async issue(grant: CodeGrant, code: string = randomSecret(32)): Promise<string> {
    if (!CODE.test(code)) throw new Error("An authorization code must be 32–128 base64url characters.");
    const id = hashSecret(code);
    return this.locks.run(id, async () => {
      const stored = await this.records.get(id);
      if (stored) {
        if (sameGrant(stored.grant, grant)) return code;
        throw new Error("This authorization code is already stored for a different grant.");
      }
      await this.records.put(id, { grant: { ...grant }, expiresAt: this.clock() + CODE_TTL_MS });
      return code;
    });
  }

  /**
   * Redeems a code and starts its grant: `check` sees the grant first and throws (an OAuth error)
   * if this request may not have it, which leaves the code unspent; `start` then makes the grant
   * under the id given, still under the code's lock, so a second redemption waits for it. Throws
   * invalid_grant for an unknown or expired code, and for one whose grant is stored: that is a
   * replay, and the grant is revoked (OAuth 2.1 §4.1.3). A code redeemed whose grant is not
   * stored (its write failed, answered 503 "try again") is redeemed again under the same grant id,
   * until REDEEMED_CODE_KEPT_MS past its expiry.
   */
  async redeem<T>(
    code: string,
    check: (grant: CodeGrant) => void,
    start: (redeemed: RedeemedCode) => Promise<T>,
  ): Promise<T> {
    if (!CODE.test(code)) throw new OAuthError("invalid_grant", REFUSED);
    const id = hashSecret(code);
    return this.locks.run(id, async () => {
      const stored = await this.records.get(id);
      if (!stored) throw new OAuthError("invalid_grant", REFUSED);
      if (stored.grantId !== undefined && (await this.grantStored(stored.grantId))) {
        await this.grants.revoke(stored.grantId);
        this.log.warn(
          { grantId: stored.grantId, clientId: stored.grant.clientId },
          "an authorization code was redeemed twice; the grant it started is revoked",
        );
        throw new OAuthError("invalid_grant", REFUSED);
      }
      if (keptUntil(stored) <= this.clock()) {
        await this.records.delete(id);
        throw new OAuthError("invalid_grant", REFUSED);
      }
      check(stored.grant);
      let grantId = stored.grantId;
      if (grantId === undefined) {
        grantId = newGrantId();
        // Written before the grant, so a crash between the two leaves a code whose grant is not
        // stored (redeemed again), never a code redeemable for a second grant.
        await this.records.put(id, { ...stored, redeemedAt: this.clock(), grantId });
      }
      return start({ grant: stored.grant, grantId, issuedAt: stored.expiresAt - CODE_TTL_MS });
    });
  }

  /**
   * Whether the grant a redemption started is stored. While its code is kept it cannot have been
   * deleted: housekeeping keeps a grant until its code can no longer come back (`keptUntil`).
   * One that cannot be read counts as stored: a replay revokes, which fails safe.
   */
  private grantStored(grantId: string): Promise<boolean> {
    return this.grants.get(grantId).then(
      (record) => record !== undefined,
      () => true,
    );
  }

  /**
   * Whether `code` is stored: issued, and not yet swept (redeemed or expired ones included, so a
   * replay still reaches `redeem` and revokes). What the token endpoint asks before it fetches a
   * client metadata document for an exchange (adr/0156).
   */
  async isStored(code: string): Promise<boolean> {
    if (!CODE.test(code)) return false;
    return (await this.records.get(hashSecret(code))) !== undefined;
  }

  /**
   * Deletes codes nobody can redeem and redeemed ones past their replay window; at boot and hourly.
   * Each code is judged under its lock, read again there, by the rule `redeem` applies: a
   * redemption in flight (its grant being made, a retry late in its window) finishes first, and
   * what it wrote decides (test/unit/oauth/codes.test.ts "a sweep waits…"). A file that is not
   * JSON, or not a code, can never be redeemed and goes too; one whose read failed (EIO, EMFILE)
   * may be a live code mid-flow, and is left for the next sweep: deleted, its exchange was refused
   * ("a sweep leaves a code it could not read for now").
   */
  async sweep(): Promise<void> {
    for (const id of await this.records.ids()) {
      await this.locks.run(id, async () => {
        let stored: unknown;
        try {
          stored = await this.records.get(id);
        } catch (error) {
          if (error instanceof CorruptJson) return this.records.delete(id);
          const code = (error as NodeJS.ErrnoException).code;
          this.log.warn(
            { code },
            "an authorization code could not be read; the next sweep looks at it again",
          );
          return;
        }
        if (stored === undefined) return;
        if (!isStoredCode(stored) || keptUntil(stored) <= this.clock()) await this.records.delete(id);
      });
    }
  }
}

/**
 * Until when a stored code is kept, and redeemable: its expiry, or for a redeemed one its replay
 * window after it — a redeemed code whose grant was never stored can be tried again in it, past a
 * Retry-After, since it proved its verifier before it expired.
 */
function keptUntil(stored: StoredCode): number {
  return stored.expiresAt + (stored.grantId === undefined ? 0 : REDEEMED_CODE_KEPT_MS);
}

/** Whether a code file's content is a code, as `issue` and `redeem` write it (its times read by `keptUntil`). */
function isStoredCode(value: unknown): value is StoredCode {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const code = value as Record<string, unknown>;
  return (
    Number.isFinite(code.expiresAt) &&
    typeof code.grant === "object" &&
    code.grant !== null &&
    (code.grantId === undefined || typeof code.grantId === "string")
  );
}

function sameGrant(a: CodeGrant, b: CodeGrant): boolean {
  return (
    a.clientId === b.clientId &&
    a.redirectUri === b.redirectUri &&
    a.redirectUriOmitted === b.redirectUriOmitted &&
    a.codeChallenge === b.codeChallenge &&
    a.resource === b.resource &&
    a.principalId === b.principalId &&
    a.scopes.length === b.scopes.length &&
    a.scopes.every((scope, i) => scope === b.scopes[i])
  );
}
