import { forEachAtMost } from "../kernel/at-most.ts";
import { type Clock, systemClock } from "../kernel/clock.ts";
import type { Logger } from "../log.ts";
import { KeyedLock } from "../storage/keyed-lock.ts";
import type { StorageLayout } from "../storage/paths.ts";
import { JsonRecords } from "../storage/records.ts";
import { GrantIndex } from "./grant-index.ts";
import {
  type AccessTokenLifetime,
  accessTokenLifetime,
  type GrantRecord,
  indexed,
  keptUntil,
  type NewGrant,
  type Refreshed,
  type RefreshRequest,
  withWorkspace,
  workspaceOfGrantedResource,
} from "./grant-record.ts";
import { consentOf, type Standing, standingRefusal } from "./grant-standing.ts";
import { grantIdOf, isGrantId } from "./grant-tokens.ts";
import { OAuthError } from "./oauth-error.ts";
import { isOfFamily, issueRefreshToken, judgeRefresh, REFRESH_REFUSED, rotate } from "./refresh-rotation.ts";

/** revokeWhere's writes: an archive revokes all of a workspace's grants, a few files at a time. */
const REVOCATION_WRITES_AT_ONCE = 8;
/**
 * How many live grants one person holds; a new one past it revokes their least recently used
 * (ADR 0089). Without it one account could make grants without end, each a file every scan read.
 */
export const MAX_LIVE_GRANTS_PER_PERSON = 100;
/** A grant revoked while its code was exchanged: its person left or was deactivated, or the code was used again. */
const REVOKED_DURING_EXCHANGE =
  "This access was revoked while the code was being exchanged (the person left the workspace or was deactivated, or the code was used again); authorize again.";

export interface GrantsOptions extends Standing {
  /** A workspace's MCP URL under the current public URL (`workspaceMcpUrl`). */
  resourceOf: (workspaceId: string) => string;
  accessTokenTtlSeconds: number;
  refreshTokenTtlSeconds: number;
  /** `oauth.refreshReuseGraceSeconds`: how long a just-replaced refresh token is answered, not judged (ADR 0136); 0 never. */
  refreshReuseGraceSeconds: number;
  /** MAX_LIVE_GRANTS_PER_PERSON unless given (tests use a small one). */
  maxLiveGrantsPerPerson?: number;
  log: Logger;
  clock?: Clock;
}

/**
 * Grants in `oauth/families`. A refresh token is `<grantId>.<secret>`, so finding its
 * grant is one file read; only hashes are stored. Every refresh rotates the token, and a
 * rotated-out token coming back means two parties hold the family: the whole grant is
 * revoked (OAuth 2.1 §4.3.1) — except the token just replaced, from its own client within the
 * grace, which gets the same successor again (refresh-rotation.ts judges each token presented;
 * refresh-grace.ts, ADR 0136). Access tokens name their grant (`gid`), so revoking the grant also
 * cuts every access token it issued, through `isRevoked`.
 */
export class Grants {
  private readonly records: JsonRecords<GrantRecord>;
  private readonly locks = new KeyedLock();
  // Checked on every MCP request, so it is memory, loaded at boot and kept by `revoke`; an id
  // leaves it with its grant's file, once every access token the grant issued has expired.
  private readonly revoked = new Set<string>();
  // Live grants by person and by workspace, so no request scans the folder (grant-index.ts).
  private readonly index = new GrantIndex();
  private readonly clock: Clock;

  constructor(
    layout: StorageLayout,
    private readonly options: GrantsOptions,
  ) {
    this.records = new JsonRecords(layout, "oauth/families");
    this.clock = options.clock ?? systemClock;
  }

  /**
   * Loads the revoked set and the index of live grants, writes revoked those whose person's
   * standing is gone, and deletes grants that can no longer matter: revoked or past their
   * lifetime, and past the last access token they issued (as recorded: a token signed under a
   * longer TTL than today's outlives today's). Called at boot, and again by the instance's
   * housekeeping (the one scan of the folder).
   */
  async load(): Promise<void> {
    for (const id of await this.records.ids()) {
      let record: GrantRecord | undefined;
      try {
        record = await this.read(id);
      } catch (error) {
        // Unreadable means unknown: treated as revoked, which fails safe.
        this.options.log.warn(
          { grantId: id, err: error },
          "unreadable oauth grant record; treated as revoked",
        );
        this.revoked.add(id);
        this.index.remove(id);
        continue;
      }
      if (!record) continue;
      const now = this.clock();
      const endedAt = Math.min(record.revokedAt ?? Number.POSITIVE_INFINITY, record.absoluteExpiresAt);
      if (record.revokedAt !== undefined) {
        this.revoked.add(record.grantId);
        this.index.remove(record.grantId);
      } else if (endedAt <= now) {
        this.index.remove(record.grantId);
      } else if (
        // Revoked while it was read, or one a refresh would refuse: written revoked now.
        this.revoked.has(record.grantId) ||
        standingRefusal(this.options, record.principalId, record.workspaceId, consentOf(record)) !== undefined
      ) {
        await this.revokeAgain(record.grantId);
      } else {
        this.index.put(indexed(record));
      }
      if (keptUntil(record, endedAt) < now) {
        await this.records.delete(id);
        // No token it issued can still be valid: held on, its id grew the set with every revocation.
        this.revoked.delete(id);
      }
    }
  }

  /**
   * A revocation remembered but not on disk (its write failed; out of the index, no revokeWhere
   * finds it again), or one a removal never made (ADR 0148). Refused meanwhile; a failure is logged.
   */
  private async revokeAgain(grantId: string): Promise<void> {
    await this.revoke(grantId).catch((error: unknown) =>
      this.options.log.warn(
        { grantId, err: error },
        "an ended oauth grant could not be marked revoked on disk",
      ),
    );
  }

  /**
   * One person's live grants (not revoked, within their lifetime), newest first: what they
   * have allowed which client to do where. Reads only that person's records (the index).
   */
  async listFor(principalId: string): Promise<GrantRecord[]> {
    const now = this.clock();
    const live: GrantRecord[] = [];
    for (const id of this.index.matching({ principalId })) {
      const record = await this.read(id).catch(() => undefined);
      if (
        record?.principalId === principalId &&
        record.revokedAt === undefined &&
        !this.revoked.has(record.grantId) &&
        record.absoluteExpiresAt > now
      ) {
        live.push(record);
      }
    }
    return live.sort((a, b) => b.createdAt - a.createdAt);
  }

  /** Whether a client holds a live grant, from the index: such a client is never swept (ADR 0137). */
  hasLiveGrantOf(clientId: string): boolean {
    return this.index.hasLiveOf(clientId, this.clock());
  }

  /**
   * Whether `token` has a refresh token's shape and names a grant that is not revoked, from the
   * index; its secret is not checked. What the token and revocation endpoints ask before a client
   * metadata document is fetched for the request (adr/0156).
   */
  namesLiveGrant(token: string): boolean {
    const grantId = grantIdOf(token);
    return grantId !== undefined && this.index.has(grantId);
  }

  isRevoked(grantId: string): boolean {
    return this.revoked.has(grantId);
  }

  /** Whether `grantId`'s access tokens are accepted: an allow-list of live grants, so one deleted and forgotten stays refused whatever a token's `exp` says. */
  admitsTokensOf(grantId: string): boolean {
    return this.index.has(grantId) && !this.revoked.has(grantId);
  }

  get(grantId: string): Promise<GrantRecord | undefined> {
    return isGrantId(grantId) ? this.read(grantId) : Promise.resolve(undefined);
  }

  /**
   * The MCP URL a grant's access tokens are for: its workspace's under the public URL now, not
   * the one consented to. A refresh after a public URL change issued a token for the old URL,
   * which /mcp refused, so the client refreshed again without end
   * (test/integration/oauth-flow.test.ts "after the public URL changes").
   */
  audienceOf(grant: Pick<GrantRecord, "workspaceId">): string {
    return this.options.resourceOf(grant.workspaceId);
  }

  /**
   * Records a new grant; with `refresh`, also its first refresh token. `consentedAt`, and the
   * grant's `standingId` and `membershipId`, say when the person approved and under which
   * standing and membership (the code's; ADR 0169 and its amendment): the person must not have been
   * deactivated since, and must still be a member of the resource's workspace, not having left it
   * since. Leaving revokes only the grants that exist, so a code redeemed after its person's removal
   * made a grant that outlived the removal and came back at rejoin (test/integration/leaving.test.ts
   * "a code approved before removal and redeemed after it makes no grant").
   */
  create(
    grant: NewGrant,
    options: { refresh: boolean; consentedAt: number },
  ): Promise<{ grant: GrantRecord; refreshToken?: string; lifetime: AccessTokenLifetime }> {
    return this.locks.run(grant.grantId, async () => {
      // An id revoked before its grant exists (a removal that raced an earlier, failed write of it)
      // is never made; nor one already stored (its code's replay waits for it and revokes it).
      if (this.revoked.has(grant.grantId) || (await this.records.get(grant.grantId))) {
        throw new OAuthError("invalid_grant", "The authorization code has already been used.");
      }
      const workspaceId = workspaceOfGrantedResource(grant.resource);
      if (workspaceId === undefined)
        throw new Error(`A grant's resource names no workspace: ${grant.resource}`);
      const consented = consentOf({ ...grant, createdAt: options.consentedAt });
      const refusal = standingRefusal(this.options, grant.principalId, workspaceId, consented);
      if (refusal !== undefined) throw new OAuthError("invalid_grant", refusal);
      const now = this.clock();
      const lifetime = accessTokenLifetime(now, this.options.accessTokenTtlSeconds);
      const record: GrantRecord = {
        ...grant,
        workspaceId,
        createdAt: now,
        absoluteExpiresAt: now + this.options.refreshTokenTtlSeconds * 1000,
        previousRefreshHashes: [],
        accessTokensUntil: lifetime.expiresAt * 1000,
      };
      const refreshToken = options.refresh ? issueRefreshToken(record) : undefined;
      // Indexed in the same turn as the standing check, before the write: a removal or a
      // deactivation that runs during the write finds the grant (revokeWhere reads only the
      // index) and revokes it. Indexed after, it was missed, and its access token worked again
      // once the person was re-added (test/unit/oauth/grants.test.ts "a revocation by person that
      // runs while a grant is being written").
      this.index.put(indexed(record));
      try {
        await this.records.put(record.grantId, record);
      } catch (error) {
        this.index.remove(record.grantId);
        throw error;
      }
      // Revoked during the write: the revocation waits for this lock and marks the record; the
      // client gets no tokens for it.
      if (this.revoked.has(record.grantId)) throw new OAuthError("invalid_grant", REVOKED_DURING_EXCHANGE);
      // Stored: nothing after may fail the exchange (its retry would be a replay); load writes it.
      await this.revokeOverflow(record).catch((err: unknown) =>
        this.options.log.warn({ err }, "a grant past a person's cap is revoked in memory, not yet on disk"),
      );
      return refreshToken === undefined
        ? { grant: record, lifetime }
        : { grant: record, refreshToken, lifetime };
    });
  }

  /**
   * Past MAX_LIVE_GRANTS_PER_PERSON, a person's new grant revokes their least recently used
   * ones. Never "the same client at the same workspace": a client named by a metadata document
   * has one client_id across all its installations, so that would cut the person's other
   * machines. Chosen from memory and taken out of the index before any await, so two grants
   * made at once push out two different ones.
   */
  private async revokeOverflow(made: GrantRecord): Promise<void> {
    const max = this.options.maxLiveGrantsPerPerson ?? MAX_LIVE_GRANTS_PER_PERSON;
    const over = this.index.overflowOf(made.principalId, max, this.clock(), made.grantId);
    if (over.length === 0) return;
    this.options.log.info(
      { principalId: made.principalId, revoked: over.map((g) => g.grantId), max },
      "a person's new oauth grant took them past the cap; their least recently used grants are revoked",
    );
    await Promise.all(over.map((grant) => this.revoke(grant.grantId)));
  }

  /** Exchanges a refresh token for its successor; throws invalid_grant, invalid_scope or invalid_target. */
  async refresh(token: string, request: RefreshRequest): Promise<Refreshed> {
    const grantId = grantIdOf(token);
    if (grantId === undefined) throw new OAuthError("invalid_grant", REFRESH_REFUSED);
    return this.locks.run(grantId, async () => {
      if (this.revoked.has(grantId)) throw new OAuthError("invalid_grant", REFRESH_REFUSED);
      const record = await this.read(grantId);
      if (!record || record.revokedAt !== undefined) throw new OAuthError("invalid_grant", REFRESH_REFUSED);
      const resource = this.audienceOf(record);
      const verdict = judgeRefresh(record, token, request, {
        standing: this.options,
        resource,
        now: this.clock(),
        graceMs: this.options.refreshReuseGraceSeconds * 1000,
      });
      if (verdict.kind === "refuse") {
        if (verdict.revoke) await this.revokeRecord(record);
        if (verdict.warning) this.options.log.warn({ grantId, clientId: record.clientId }, verdict.warning);
        throw verdict.error;
      }
      const { scopes } = verdict;
      if (verdict.kind === "resend") {
        // Nothing is written: the window still runs from the rotation, so answering cannot prolong it.
        this.options.log.info(
          { grantId, clientId: record.clientId },
          "the refresh token just replaced came back from its client within the grace; answered with its successor",
        );
        const lifetime = await this.resentLifetime(record);
        return { grant: record, resource, refreshToken: verdict.refreshToken, scopes, lifetime };
      }
      const now = this.clock();
      const refreshToken = rotate(record, verdict, now, this.options.refreshReuseGraceSeconds > 0);
      const lifetime = this.recordLifetime(record, now);
      await this.records.put(grantId, record);
      this.index.touch(grantId, now);
      return { grant: record, resource, refreshToken, scopes, lifetime };
    });
  }

  /** A new access token's lifetime from `now`, its `exp` recorded in `record` (the caller writes it). */
  private recordLifetime(record: GrantRecord, now: number): AccessTokenLifetime {
    const lifetime = accessTokenLifetime(now, this.options.accessTokenTtlSeconds);
    // Never lowered: a clock stepped back does not shorten what was issued before.
    record.accessTokensUntil = Math.max(record.accessTokensUntil ?? 0, lifetime.expiresAt * 1000);
    return lifetime;
  }

  /**
   * The lifetime of the access token a resent successor comes with (ADR 0136): it ends with the
   * rotation's, which the record holds, so nothing is written. Only when that has already passed
   * (a TTL shorter than the grace) is a fresh one recorded. A record from before the expiry was
   * kept is judged by the longest TTL allowed, past any token issued now.
   */
  private async resentLifetime(record: GrantRecord): Promise<AccessTokenLifetime> {
    const now = this.clock();
    const fresh = accessTokenLifetime(now, this.options.accessTokenTtlSeconds);
    if (record.accessTokensUntil === undefined) return fresh;
    const until = Math.floor(record.accessTokensUntil / 1000);
    if (until > fresh.issuedAt) return { ...fresh, expiresAt: Math.min(fresh.expiresAt, until) };
    const lifetime = this.recordLifetime(record, now);
    await this.records.put(record.grantId, record);
    return lifetime;
  }

  /** Revokes a grant: its refresh token stops working, and so do its access tokens. */
  revoke(grantId: string): Promise<void> {
    // Remembered before the write, so a grant being created right now cannot slip through.
    this.revoked.add(grantId);
    this.index.remove(grantId);
    if (!isGrantId(grantId)) return Promise.resolve();
    return this.locks.run(grantId, async () => {
      const record = await this.read(grantId).catch(() => undefined);
      if (record && record.revokedAt === undefined) await this.revokeRecord(record);
    });
  }

  /**
   * Revokes every live grant of a person, of a workspace, or of a person in a workspace: what
   * leaving a workspace, archiving it and deactivating the person end. Without it a removed
   * member's refresh token kept rotating, and re-adding them revived the old grant without
   * new consent (test/integration/leaving.test.ts). Matched by workspace id, never by URL: a
   * grant made under an earlier public URL is the workspace's all the same. Reads only the
   * matching records (the index). All are refused before any is written, and each is written
   * whatever another's write did, the first failure thrown at the end: awaited in turn, one that
   * failed left the person's later grants live (test/integration/members-unflushed-write.test.ts
   * "every grant of the person is refused"). Returns how many grants it revoked.
   */
  async revokeWhere(match: { principalId?: string; workspaceId?: string }): Promise<number> {
    if (match.principalId === undefined && match.workspaceId === undefined) {
      throw new Error("revokeWhere needs a person or a workspace; it never revokes every grant.");
    }
    const ids = this.index.matching(match);
    for (const id of ids) {
      this.revoked.add(id);
      this.index.remove(id);
    }
    await forEachAtMost(ids, REVOCATION_WRITES_AT_ONCE, (id) => this.revoke(id));
    return ids.length;
  }

  /**
   * RFC 7009 for refresh tokens: revokes the token's grant if the token is, or was, one of
   * its refresh tokens and the grant belongs to `clientId`. Anything else changes nothing.
   */
  async revokeRefreshToken(token: string, clientId: string): Promise<boolean> {
    const grantId = grantIdOf(token);
    if (grantId === undefined) return false;
    const record = await this.read(grantId).catch(() => undefined);
    if (!record || record.clientId !== clientId) return false;
    const known = isOfFamily(record, token);
    if (known) await this.revoke(grantId);
    return known;
  }

  /** A grant record as stored, with its workspace (`withWorkspace`); load() treats one that throws as revoked. */
  private async read(grantId: string): Promise<GrantRecord | undefined> {
    const record = await this.records.get(grantId);
    return record && withWorkspace(record, grantId);
  }

  private async revokeRecord(record: GrantRecord): Promise<void> {
    this.revoked.add(record.grantId);
    this.index.remove(record.grantId);
    record.revokedAt = this.clock();
    await this.records.put(record.grantId, record);
  }
}
