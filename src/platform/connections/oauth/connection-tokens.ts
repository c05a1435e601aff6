import type { FetchLike } from "@modelcontextprotocol/client";
import type { Clock } from "../../../kernel/clock.ts";
import type { ExclusiveLeases } from "../../../kernel/leases.ts";
import type { Logger } from "../../../log.ts";
import { CredentialNotFound } from "../../../storage/credential-store.ts";
import { DiskCache } from "../../../storage/disk-cache.ts";
import type { ConnectionRecord, StoredOAuth } from "../model.ts";
import type { CredentialVault } from "../remote.ts";
import type { IssuedTo, OAuthClient } from "./client-identity.ts";
import { type CredentialExchanges, RootLetGo } from "./credential-exchanges.ts";
import type { AuthorizationTarget } from "./discovery.ts";
import { reauthorizer } from "./record-home.ts";
import { RefreshRefused, refreshTokens, type TokenSet } from "./tokens.ts";

/** The field a connection's token set is sealed under, bound into its ciphertext. */
export const TOKENS_FIELD = "auth.oauth.tokens";

/**
 * An access token is not used in its last seconds: it could expire on the way. The margin is at
 * most half its lifetime, so a token living under a minute is still used for its first half
 * rather than refreshed before every request (connection-tokens.test.ts "short-lived").
 */
const EXPIRY_MARGIN_MS = 30_000;

/** The connection has no tokens yet (pending_auth), or its refresh was refused: it must be authorized. */
export class NotAuthorized extends Error {}

export interface ConnectionTokensDeps {
  vault: CredentialVault;
  leases: ExclusiveLeases;
  clock: Clock;
  log: Logger;
  fetch: FetchLike;
  /** Where each refresh runs as an exchange of credentials under way, which a graceful stop waits for. */
  exchanges: CredentialExchanges;
  /** The record as stored now (another holder may have re-authorized it meanwhile). */
  current(record: ConnectionRecord): Promise<ConnectionRecord>;
  /**
   * Whether `record`'s connection is stored now, asked without a disk read: false once its remove
   * has taken it out of the store's index, before that remove forgets what is cached for it.
   */
  stored(record: ConnectionRecord): boolean;
  /**
   * Where the connection's tokens come from, and who Atrium is there: the client a token set was
   * `issuedTo` while Atrium still knows it (a server binds a refresh token to its client).
   */
  authority(
    record: ConnectionRecord,
    issuedTo?: IssuedTo,
  ): Promise<{ target: AuthorizationTarget; client: OAuthClient }>;
  /** A refresh was refused for good: the ConnectionRevalidator (the owner's, for a personal one) gives its verdict. */
  refused(record: ConnectionRecord): void;
}

/** The lease key of a connection's token family: refresh and activation take it. */
export function tokenLease(record: Pick<ConnectionRecord, "id">): string {
  return `connection-tokens:${record.id}`;
}

/**
 * A connection's bearer token, fresh. An expired one (or one the server just answered 401 to) is
 * refreshed single-flight per connection across the instance: under the connection's lease the
 * stored token set is read again (another holder may have refreshed already), then refreshed,
 * and the rotated refresh token is sealed to disk before the new access token is handed out; a
 * failure to seal is an error, never swallowed (the old refresh token is spent). `invalid_grant`
 * is final: the token set is marked refused, the revalidator is told, and it is never tried again.
 * A graceful stop cuts no part of a refresh, its discovery included: it is made on behalf of
 * requests the drain lets finish, each of which stops waiting for it when its own signal ends
 * (remote.ts authorizedFetch), and its answer, once given, is sealed, since a server that rotates
 * has spent the stored refresh token; the stop waits for it after the drain (CredentialExchanges,
 * adr/0122, amended), and none starts or is sealed once the stop lets the root go.
 */
export class ConnectionTokens {
  /**
   * Token sets as last written, or opened with no write or discard of their credential ending
   * meanwhile, by credential id (DiskCache, ADR 0162). A set is opened outside the lease, on its
   * first use; kept whenever it came back, one a refresh resealed meanwhile put the replaced set
   * back in memory (a call then sent a dead access token), and one a re-authorization discarded
   * meanwhile stayed in memory until the process ended (ADR 0155;
   * connection-tokens-read-overtaken.test.ts).
   */
  private readonly cache = new DiskCache<TokenSet>();
  /** Credential ids whose refresh token the authorization server refused. */
  private readonly refusedSets = new Set<string>();
  /**
   * The client secret each connection last refreshed with, by connection id: a token endpoint that
   * refuses the client may quote it back, and the failure is retold without it (secrets()).
   */
  private readonly clientSecrets = new Map<string, string>();
  /**
   * The token set each connection's current one replaced (a refresh's, or a re-authorization's),
   * by connection id, while its access token may still be valid: a call sent it before, and its
   * server may echo it in the answer told after (secrets()). One per connection, dropped once it
   * has expired, when the next replaces it, or when the connection is forgotten.
   */
  private readonly replaced = new Map<string, TokenSet>();

  constructor(private readonly deps: ConnectionTokensDeps) {}

  /**
   * `rejected`: an access token the server refused, which is not handed out again. `signal`: the
   * request's, which once aborted starts no refresh; a refresh started is never cut by it.
   */
  async bearer(record: ConnectionRecord, rejected?: string, signal?: AbortSignal): Promise<string> {
    const auth = oauthOf(record);
    if (auth.tokens && !this.refusedSets.has(auth.tokens)) {
      const cached = this.cache.get(auth.tokens) ?? (await this.open(record, auth.tokens));
      if (this.usable(cached, rejected)) return cached.accessToken;
    }
    // Asked after the read of a set not yet cached (its first use in the process): a request cut
    // meanwhile would start a refresh for nobody (connection-tokens.test.ts "cut while").
    signal?.throwIfAborted();
    return this.deps.exchanges.run(() =>
      this.deps.leases.run(tokenLease(record), () => this.refreshHeld(record, rejected)),
    );
  }

  /** Whether the connection's current token set was refused at refresh: its credential lapsed. */
  refused(record: ConnectionRecord): boolean {
    return (
      record.auth.kind === "oauth" &&
      record.auth.tokens !== undefined &&
      this.refusedSets.has(record.auth.tokens)
    );
  }

  /**
   * The access and refresh token of the connection's token set as last opened or refreshed, those
   * of the set it replaced (by a refresh or a re-authorization) until that one's access token
   * expires (a call under way may have been sent it), and the client secret it last refreshed with.
   */
  secrets(record: ConnectionRecord): string[] {
    const auth = oauthOf(record);
    const tokens = auth.tokens === undefined ? undefined : this.cache.get(auth.tokens);
    let replaced = this.replaced.get(record.id);
    if (replaced?.expiresAt !== undefined && this.deps.clock() >= replaced.expiresAt) {
      this.replaced.delete(record.id);
      replaced = undefined;
    }
    const clientSecret = this.clientSecrets.get(record.id);
    return [
      ...[tokens, replaced].flatMap((set) =>
        set ? [set.accessToken, ...(set.refreshToken ? [set.refreshToken] : [])] : [],
      ),
      ...(clientSecret ? [clientSecret] : []),
    ];
  }

  /**
   * Throws RootLetGo once the stop has let the root go (a next process may own it): an
   * activation asks before each of its writes, as the seal does.
   */
  checkMayWrite(): void {
    this.deps.exchanges.checkMayWrite();
  }

  /** Seals a new token set for `record` (an activation); answers its credential id. */
  async seal(record: ConnectionRecord, tokens: TokenSet): Promise<string> {
    this.deps.exchanges.checkMayWrite();
    const id = await this.deps.vault.put(record.id, TOKENS_FIELD, JSON.stringify(tokens));
    // Sealed under a new id, which no read can have asked for: kept as written.
    if (this.remembers(record)) await this.cache.write(id, tokens, async () => undefined);
    return id;
  }

  /**
   * Forgets what is held in memory for a connection removed or let go with its archived workspace:
   * its token set, whether it was refused, the set it replaced, the client secret it last
   * refreshed with. The sealed set is the remover's to delete (an archive's, its releaser's).
   */
  forget(record: ConnectionRecord): void {
    const auth = oauthOf(record);
    if (auth.tokens !== undefined) {
      this.cache.delete(auth.tokens);
      this.refusedSets.delete(auth.tokens);
    }
    this.clientSecrets.delete(record.id);
    this.replaced.delete(record.id);
  }

  /**
   * Whether anything of `record`'s connection may be kept in memory: it is stored now. Asked just
   * before each entry is kept, so a refresh or discovery ending after the remove keeps nothing:
   * what it kept before the store let the connection go, the remove's forget() clears. Nothing is
   * kept per removal, so removals add nothing to memory, however many (connection-tokens.test.ts
   * "forgotten", "removals").
   */
  remembers(record: ConnectionRecord): boolean {
    return this.deps.stored(record);
  }

  /**
   * A re-authorization's record names a new set: the one it replaced (`credentialId`) is kept as
   * the replaced set, as a refresh's is, since its access token is still good at the server, which
   * may quote it after (connections-oauth-replaced-tokens.test.ts). Memory only: the sealed set is
   * discard()ed after.
   */
  superseded(record: ConnectionRecord, credentialId: string): void {
    const before = this.cache.get(credentialId);
    this.cache.delete(credentialId);
    if (before && this.remembers(record)) this.keepReplaced(record, before);
  }

  /** Forgets a token set that is no longer the connection's, and removes it from the store. */
  async discard(credentialId: string): Promise<void> {
    this.cache.delete(credentialId);
    this.refusedSets.delete(credentialId);
    await this.deps.vault.delete(credentialId);
  }

  private async refreshHeld(given: ConnectionRecord, rejected: string | undefined): Promise<string> {
    const record = await this.deps.current(given);
    const auth = oauthOf(record);
    if (!auth.tokens) {
      throw new NotAuthorized(
        `Connection "${record.name}" is not authorized yet; ${reauthorizer(record)} must authorize it.`,
      );
    }
    if (this.refusedSets.has(auth.tokens)) throw refusedError(record);
    // Read again inside the lease: the holder before us may have refreshed already.
    const stored = await this.open(record, auth.tokens);
    if (this.usable(stored, rejected)) return stored.accessToken;
    // Not cut by the stop, though it only looks: a tool call in flight that the drain lets finish
    // waits on it (test/integration/connections-oauth-stop.test.ts "a tool call in flight"); a
    // look waiting on it is ended by its own signal instead (remote.ts authorizedFetch).
    const { target, client } = await this.deps.authority(record, stored.issuedTo);
    if (client.info.client_secret && this.remembers(record))
      this.clientSecrets.set(record.id, client.info.client_secret);
    let next: TokenSet;
    try {
      next = await refreshTokens(target, client, stored, this.deps.fetch, this.deps.clock);
    } catch (error) {
      if (error instanceof RefreshRefused) {
        if (this.remembers(record)) this.refusedSets.add(auth.tokens);
        this.deps.log.warn(
          { workspaceId: record.workspaceId, connection: record.name },
          "connection refresh token refused; re-authorization required",
        );
        this.deps.refused(record);
        throw refusedError(record);
      }
      throw error;
    }
    // Sealed before use: a rotated refresh token lost here would end the family at the next refresh.
    // Through the cache, so an open of the set under way outside the lease keeps nothing, and one
    // that lands and then fails its flush is the set sealed (ADR 0166).
    const credentialId = auth.tokens;
    const before = this.cache.get(credentialId);
    try {
      this.deps.exchanges.checkMayWrite();
      await this.cache.write(credentialId, next, () =>
        this.deps.vault.replace(credentialId, record.id, TOKENS_FIELD, JSON.stringify(next)),
      );
    } catch (error) {
      const about = { workspaceId: record.workspaceId, connection: record.name };
      if (error instanceof RootLetGo) {
        // The stop no longer waited (its drain deadline, a second signal): the next process may
        // own the root now, and the rotated refresh token is lost as it is when the process exits.
        this.deps.log.warn(about, "refreshed tokens not sealed: Atrium had let go of its data");
      } else if (error instanceof CredentialNotFound) {
        // Its connection was removed during the refresh, its credential with it: nothing to seal
        // for, and nothing wrong (connections-oauth-token-wait.test.ts "remove").
        this.deps.log.info(
          about,
          "refreshed tokens not sealed: the connection's credential was removed meanwhile",
        );
      } else {
        this.deps.log.error(
          { ...about, err: error },
          "refreshed tokens could not be sealed; the new access token is not used",
        );
      }
      throw error;
    }
    this.kept(record, credentialId, before, next);
    return next.accessToken;
  }

  /** The set sealed under `credentialId`, read; kept unless a write or discard of it overtook the read. */
  private async open(record: ConnectionRecord, credentialId: string): Promise<TokenSet> {
    const before = this.cache.get(credentialId);
    const tokens = await this.cache.read(
      credentialId,
      async () => JSON.parse(await this.deps.vault.open(credentialId, record.id, TOKENS_FIELD)) as TokenSet,
    );
    if (this.cache.get(credentialId) === tokens) this.kept(record, credentialId, before, tokens);
    return tokens;
  }

  /**
   * `tokens` was kept as the set sealed under `credentialId`: let go at once when the connection is
   * not stored (remembers); else a set it replaced (`before`: refreshed here or, read again, by
   * another holder) is kept as the connection's replaced one (keepReplaced).
   */
  private kept(
    record: ConnectionRecord,
    credentialId: string,
    before: TokenSet | undefined,
    tokens: TokenSet,
  ): void {
    if (!this.remembers(record)) this.cache.delete(credentialId);
    else if (before && before.accessToken !== tokens.accessToken) this.keepReplaced(record, before);
  }

  /** `before` is the connection's replaced set now, in place of any it held (one per connection). */
  private keepReplaced(record: ConnectionRecord, before: TokenSet): void {
    this.replaced.set(record.id, before);
  }

  private usable(tokens: TokenSet, rejected: string | undefined): boolean {
    if (tokens.accessToken === rejected) return false;
    if (tokens.expiresAt === undefined) return true;
    // A set sealed before `receivedAt` was kept has no known lifetime: the whole margin.
    const margin =
      tokens.receivedAt === undefined
        ? EXPIRY_MARGIN_MS
        : Math.min(EXPIRY_MARGIN_MS, (tokens.expiresAt - tokens.receivedAt) / 2);
    return this.deps.clock() < tokens.expiresAt - margin;
  }
}

export function oauthOf(record: ConnectionRecord): StoredOAuth {
  if (record.auth.kind !== "oauth") throw new Error(`Connection "${record.name}" does not use OAuth.`);
  return record.auth;
}

function refusedError(record: ConnectionRecord): NotAuthorized {
  return new NotAuthorized(
    `The authorization of connection "${record.name}" was refused by its authorization server; ${reauthorizer(record)} must re-authorize it.`,
  );
}
