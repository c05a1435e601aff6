import type { FetchLike } from "@modelcontextprotocol/client";
import { untilAborted } from "../../until-aborted.ts";
import type { ConnectionRecord } from "../model.ts";
import {
  type ClientRegistrations,
  type ConfiguredClient,
  clientFor,
  clientIssuedTo,
  type IssuedTo,
  type OAuthClient,
} from "./client-identity.ts";
import { oauthOf } from "./connection-tokens.ts";
import { AuthorizationRefused, type AuthorizationTarget, discoverAuthorization } from "./discovery.ts";
import { oauthPaths, redirectUriFor } from "./paths.ts";
import { promisesIss } from "./tokens.ts";
import { cutBy } from "./until-stop.ts";

export interface AuthoritiesDeps {
  publicUrl: () => string;
  fetch: FetchLike;
  configured: readonly ConfiguredClient[];
  registrations: ClientRegistrations;
  /** Whether the connection is still kept in memory: not removed in this process. */
  remembers(record: ConnectionRecord): boolean;
}

/**
 * Where each OAuth connection's tokens come from — its authorization server, discovered once per
 * process and pinned to the issuer it was added with — and who Atrium is there.
 */
export class Authorities {
  /** Each connection's discovery, by connection id, shared by the steps that wait on it. */
  private readonly discoveries = new Map<string, SharedDiscovery>();

  constructor(private readonly deps: AuthoritiesDeps) {}

  /**
   * Where `record`'s tokens come from and who Atrium is there: the client a token set was
   * `issuedTo` while Atrium still knows it — after the public URL changed, a refresh is still made
   * as the client the server bound the refresh token to — else the client for Atrium's redirect
   * URI now (registered at first need). `signal` (a sign-in's look; a token refresh passes none,
   * the stop cuts none of it) ends this step's wait for the discovery and cuts its registration.
   */
  async authority(
    record: ConnectionRecord,
    issuedTo?: IssuedTo,
    signal?: AbortSignal,
  ): Promise<{ target: AuthorizationTarget; client: OAuthClient }> {
    // A step already ended neither starts a discovery nor joins one: it gets its own abort, and a
    // discovery done or under way stays the others' (authorities.test.ts "already aborted").
    signal?.throwIfAborted();
    const target = await this.discovered(record).join(signal);
    const issued = issuedTo && (await clientIssuedTo(target, issuedTo, this.deps));
    return { target, client: issued ?? (await this.clientAt(target, signal)) };
  }

  /** A removed connection: its discovery is not kept. */
  forget(record: ConnectionRecord): void {
    this.discoveries.delete(record.id);
  }

  /** The client for Atrium's redirect URI at `target`; `signal` cuts a registration's request. */
  clientAt(target: AuthorizationTarget, signal: AbortSignal | undefined): Promise<OAuthClient> {
    const paths = oauthPaths(this.deps.publicUrl());
    return clientFor(target, {
      redirectUri: this.redirectUriAt(target),
      ...(paths.metadataDocument ? { metadataDocumentUrl: paths.metadataDocument } : {}),
      configured: this.deps.configured,
      registrations: this.deps.registrations,
      fetch: signal ? cutBy(this.deps.fetch, signal) : this.deps.fetch,
    });
  }

  /** The shared callback where the server promises `iss`, else the issuer's own (ADR 0077). */
  redirectUriAt(target: AuthorizationTarget): string {
    return redirectUriFor(oauthPaths(this.deps.publicUrl()), target.issuer, promisesIss(target));
  }

  /**
   * The connection's discovery under way or done, else a new one. A failed or cut one is not kept,
   * so the next step discovers again; nor is one for a connection removed meanwhile, whose late
   * step keeps nothing of it (connection-tokens.test.ts "forgotten").
   */
  private discovered(record: ConnectionRecord): SharedDiscovery {
    const known = this.discoveries.get(record.id);
    if (known && !known.cut) return known;
    const made = new SharedDiscovery((signal) => this.discoverPinned(record, signal));
    if (!this.deps.remembers(record)) return made;
    this.discoveries.set(record.id, made);
    made.target.catch(() => {
      if (this.discoveries.get(record.id) === made) this.discoveries.delete(record.id);
    });
    return made;
  }

  private async discoverPinned(record: ConnectionRecord, signal: AbortSignal): Promise<AuthorizationTarget> {
    const auth = oauthOf(record);
    const target = await discoverAuthorization(record.url, this.deps.fetch, { signal });
    if (target.issuer !== auth.issuer) {
      throw new AuthorizationRefused(
        `The server of connection "${record.name}" now names the authorization server ${target.issuer}, not ${auth.issuer}; ${record.owner === undefined ? "an admin" : "its owner"} must remove and add it again.`,
      );
    }
    return target;
  }
}

/**
 * One discovery of a connection's authorization server, shared by the steps that wait on it. It
 * carries no step's signal: each step waits as long as its own signal lets it, so a sign-in's look
 * that the stop cuts fails no token refresh waiting on the same discovery, and a sign-in waiting on
 * a refresh's discovery still answers 409 `stopping` at once (adr/0122, amended;
 * connections-oauth-stop.test.ts "sharing a discovery"). Its requests are cut once every step
 * waiting on it has stopped waiting and none without a signal (a token refresh, which the stop
 * lets finish) joined it: nobody wants the answer any more. Otherwise the request timeout bounds them.
 * A discovery that has answered is never cut, whoever stops waiting on it then.
 */
class SharedDiscovery {
  readonly target: Promise<AuthorizationTarget>;
  private readonly controller = new AbortController();
  private waiting = 0;
  private kept = false;
  private settled = false;

  constructor(discover: (signal: AbortSignal) => Promise<AuthorizationTarget>) {
    this.target = discover(this.controller.signal);
    const settle = () => {
      this.settled = true;
    };
    // Registered before any step's handlers, so a step leaving as it settles finds it settled.
    this.target.then(settle, settle);
  }

  /** Whether its requests were cut, every step having stopped waiting. */
  get cut(): boolean {
    return this.controller.signal.aborted;
  }

  join(signal: AbortSignal | undefined): Promise<AuthorizationTarget> {
    if (!signal) {
      this.kept = true;
      return this.target;
    }
    this.waiting += 1;
    const waited = untilAborted(this.target, signal);
    // Registered before the step's own handlers, so a step joining after this one left finds the
    // discovery already cut, and starts another. One already settled is never cut: its answer is
    // kept for the next step, cut or not (a cut would only make it discover again).
    const left = () => {
      this.waiting -= 1;
      if (signal.aborted && this.waiting === 0 && !this.kept && !this.settled)
        this.controller.abort(signal.reason);
    };
    waited.then(left, left);
    return waited;
  }
}
