import { MAX_ACCESS_TOKEN_TTL_SECONDS } from "../instance/schema.ts";
import { CLOCK_TOLERANCE_SECONDS } from "../kernel/clock.ts";
import { CODE_TTL_MS, REDEEMED_CODE_KEPT_MS } from "./codes.ts";
import type { IndexedGrant } from "./grant-index.ts";

/** The end of every resource a grant was made for: `<publicUrl>/mcp/ws_<16 hex>`. */
const RESOURCE_WORKSPACE = /\/mcp\/(ws_[0-9a-f]{16})$/;

/**
 * One person's consent to one client for one workspace, from a code exchange until it is
 * revoked or its absolute lifetime ends; a refresh-token family. Times are epoch ms.
 */
export interface GrantRecord {
  grantId: string;
  clientId: string;
  /**
   * The client's `client_name` when the code was exchanged, for the person's list of what they
   * allowed: listing never asks a metadata document again (adr/0127). Absent in records written
   * before it was kept, and for a client that gave no name.
   */
  clientName?: string;
  principalId: string;
  /**
   * The workspace it is for: what leaving and archiving revoke by, and whose MCP URL *now* its
   * tokens are issued for. Records written before it was stored get it from `resource`'s path.
   */
  workspaceId: string;
  /** The workspace's MCP URL as the person consented to it (the public URL may change since). */
  resource: string;
  scopes: string[];
  createdAt: number;
  /**
   * The person's standing id when they consented (their code's), what their standing is judged by
   * at each refresh and load; absent in records written before it was kept, and in one made from a
   * code that kept none: those are judged by `createdAt` while the person holds no id, and refused
   * once they hold one (ADR 0169, amended later still).
   */
  standingId?: string;
  /**
   * The id of its person's membership of its workspace when they consented (their code's): a
   * grant counts only in that membership, not one they joined again since. Absent in records
   * written before it was kept, and in one made from a code that kept none: those are judged by
   * `createdAt` against the member's `addedAt` while the member holds no id, and refused once they
   * hold one (ADR 0169, amended).
   */
  membershipId?: string;
  /** The last refresh, epoch ms; with `createdAt`, what "least recently used" is judged by. */
  refreshedAt?: number;
  absoluteExpiresAt: number;
  currentRefreshHash?: string;
  /** Newest first: `[0]` is the token the last rotation (at `refreshedAt`) replaced. */
  previousRefreshHashes: string[];
  /**
   * The current refresh token sealed under a key only the token it replaced yields, for the
   * grace after a rotation (refresh-grace.ts, ADR 0136); absent when the grace is off.
   */
  successorSealed?: string;
  revokedAt?: number;
  /**
   * The latest `exp` of the access tokens it issued, written with the exchange and each rotation:
   * the file and the revocation are kept until then (+ tolerance), whatever the TTL is now.
   * Records written before it was kept are judged by the longest TTL allowed.
   */
  accessTokensUntil?: number;
}

/** An access token's `iat` and `exp`, epoch seconds: decided by its grant, which records the `exp`. */
export interface AccessTokenLifetime {
  issuedAt: number;
  expiresAt: number;
}

/** The lifetime of an access token issued at `now` (epoch ms) for `ttlSeconds`. */
export function accessTokenLifetime(now: number, ttlSeconds: number): AccessTokenLifetime {
  const issuedAt = Math.floor(now / 1000);
  return { issuedAt, expiresAt: issuedAt + ttlSeconds };
}

export interface NewGrant {
  grantId: string;
  clientId: string;
  clientName?: string;
  principalId: string;
  resource: string;
  scopes: string[];
  /** The person's standing id when they consented (their code's), if the code kept one. */
  standingId?: string;
  /** The id of their membership of the workspace when they consented, if the code kept one. */
  membershipId?: string;
}

export interface RefreshRequest {
  clientId: string;
  /** Narrower scopes for the new access token; the grant's own when absent. */
  scopes?: string[];
  resource?: string;
}

export interface Refreshed {
  grant: GrantRecord;
  /** The workspace's MCP URL now: the new access token's audience. */
  resource: string;
  refreshToken: string;
  scopes: string[];
  /** The new access token's, within the grant's `accessTokensUntil`. */
  lifetime: AccessTokenLifetime;
}

/**
 * The workspace a granted resource names. Every resource was checked at /oauth/authorize to be
 * `workspaceMcpUrl(publicUrl, id)` for the public URL of the day, so its path ends in the id;
 * the rest of it may no longer be this instance's URL.
 */
export function workspaceOfGrantedResource(resource: string): string | undefined {
  return RESOURCE_WORKSPACE.exec(resource)?.[1];
}

/**
 * A grant record as stored, with its workspace: one written before `workspaceId` was stored
 * gets it from its resource's path. One that names none was not written by Atrium: it throws.
 */
export function withWorkspace(stored: GrantRecord, grantId: string): GrantRecord {
  if (typeof stored.workspaceId === "string") return stored;
  const workspaceId = workspaceOfGrantedResource(String(stored.resource));
  if (workspaceId === undefined) throw new Error(`oauth grant ${grantId} names no workspace`);
  return { ...stored, workspaceId };
}

/** What the in-memory index keeps of a grant: who, where, and when it was last used and ends. */
export function indexed(record: GrantRecord): IndexedGrant {
  return {
    grantId: record.grantId,
    principalId: record.principalId,
    workspaceId: record.workspaceId,
    clientId: record.clientId,
    lastUsedAt: record.refreshedAt ?? record.createdAt,
    absoluteExpiresAt: record.absoluteExpiresAt,
  };
}

/**
 * Until when a grant that ended at `endedAt` (epoch ms) is kept, file and revoked id: past the
 * last access token it issued (as recorded; for a record from before that was kept, the longest
 * TTL allowed after it ended) and the clock tolerance, and past the last moment the code that made
 * it can come back, so a replay finds it stored and revokes it (codes.ts).
 */
export function keptUntil(record: GrantRecord, endedAt: number): number {
  const lastToken = record.accessTokensUntil ?? endedAt + MAX_ACCESS_TOKEN_TTL_SECONDS * 1000;
  return Math.max(
    endedAt,
    lastToken + CLOCK_TOLERANCE_SECONDS * 1000,
    record.createdAt + CODE_TTL_MS + REDEEMED_CODE_KEPT_MS,
  );
}
