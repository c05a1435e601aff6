import type { FetchLike } from "@modelcontextprotocol/client";
import type { Clock } from "../../kernel/clock.ts";
import type { Logger } from "../../log.ts";
import { guardedFetch, RedirectRefused } from "../../sources/guarded-fetch.ts";
import { McpSource } from "../../sources/mcp-source.ts";
import { untilAborted } from "../until-aborted.ts";
import type { ConnectionSettings } from "./config.ts";
import type { ConnectionRecord } from "./model.ts";
import { insufficientScope, type StepUpLink, StepUpRequired } from "./oauth/step-up.ts";
import { retold } from "./remote-failure.ts";
import { RemoteSource } from "./remote-source.ts";
import { remoteOutputValidator } from "./schemas.ts";
import { secretsOfHeader } from "./without-secrets.ts";

/** Where a connection's sealed credential is opened; the credential store implements it. */
export interface CredentialVault {
  put(recordId: string, field: string, value: string, id?: string): Promise<string>;
  replace(id: string, recordId: string, field: string, value: string): Promise<void>;
  open(id: string, recordId: string, field: string): Promise<string>;
  delete(id: string): Promise<void>;
}

/** The field a static credential is sealed under, bound into its ciphertext. */
export const STATIC_VALUE_FIELD = "auth.value";
/** The field a query credential is sealed under (adr/0108). */
export const QUERY_VALUE_FIELD = "auth.query.value";

/** What an OAuth connection's requests need from its authorization (oauth/). */
export interface OAuthBearers {
  /**
   * A fresh access token; `rejected` is one the server just refused, never handed out again.
   * `signal` (the request's), aborted before a refresh would start, starts none.
   */
  bearer(record: ConnectionRecord, rejected?: string, signal?: AbortSignal): Promise<string>;
  /** Whether the connection's refresh token was refused: its credential lapsed. */
  refused(record: ConnectionRecord): boolean;
  /** Starts (or hands out again) a re-authorization for more scope; answers its go_url. */
  stepUp(record: ConnectionRecord, scope: string | undefined): Promise<StepUpLink>;
  /** The connection's tokens as last seen, which no failure it tells may repeat. */
  secrets(record: ConnectionRecord): readonly string[];
}

/** How a connection's server is reached: every request guarded, timed, capped. */
export class RemoteServers {
  constructor(
    private readonly settings: ConnectionSettings,
    private readonly vault: CredentialVault,
    private readonly clock: Clock,
    private readonly oauth?: OAuthBearers,
    /** Told the address a refused host resolved to, which no answer names (guarded-fetch.ts). */
    private readonly log?: Logger,
  ) {}

  /**
   * The headers a request to the server carries: the sealed static credential opened now, or an
   * OAuth connection's access token, refreshed first when it has expired.
   */
  async headers(record: ConnectionRecord): Promise<Record<string, string>> {
    if (record.auth.kind === "oauth" && this.oauth) {
      return { authorization: `Bearer ${await this.oauth.bearer(record)}` };
    }
    if (record.auth.kind !== "static") return {};
    return {
      [record.auth.header]: await this.vault.open(record.auth.credential, record.id, STATIC_VALUE_FIELD),
    };
  }

  /**
   * The URL a request to the server goes to: the record's, with a query credential's parameter
   * opened now and added. Only the transport sees it; the record, and every view of it, keeps the
   * URL without it (adr/0108).
   */
  private async endpoint(record: ConnectionRecord): Promise<{ url: URL; secret?: string }> {
    const url = new URL(record.url);
    if (record.auth.kind !== "query") return { url };
    const secret = await this.vault.open(record.auth.credential, record.id, QUERY_VALUE_FIELD);
    url.searchParams.append(record.auth.param, secret);
    return { url, secret };
  }

  /** Whether `record`'s OAuth refresh token was refused (the revalidator's verdict reads it). */
  credentialRefused(record: ConnectionRecord): boolean {
    return this.oauth?.refused(record) ?? false;
  }

  /**
   * A client of the server as `record` describes it, whose failures never repeat the
   * connection's credential. `onStatus` hears the status of every answer the client gets (a 401
   * wakes the credential check) — after an OAuth connection's one retry with a refreshed token,
   * so a 401 that the refresh cured is not heard; `listMaxAgeMs` bounds how old its tool listing
   * may get.
   */
  async source(
    record: ConnectionRecord,
    options: { onStatus?: (status: number) => void; listMaxAgeMs?: number } = {},
  ): Promise<RemoteSource> {
    const fetch = guardedFetch({
      allowPrivate: this.settings.allowPrivateAddresses,
      timeoutMs: this.settings.requestTimeoutMs,
      maxResponseBytes: this.settings.maxResponseBytes,
      eventStreams: true,
      ...(this.log ? { log: this.log } : {}),
    });
    const oauth = record.auth.kind === "oauth" ? this.oauth : undefined;
    // An OAuth token is set per request, never once per client: it is refreshed underneath.
    const headers = oauth ? {} : await this.headers(record);
    const { url, secret } = await this.endpoint(record);
    const secrets = [
      ...Object.values(headers).flatMap(secretsOfHeader),
      ...(secret === undefined ? [] : [secret]),
    ];
    const authorized = oauth ? authorizedFetch(record, fetch, oauth) : fetch;
    const live = new McpSource(
      record.name,
      {
        kind: "streamable-http",
        url,
        headers,
        fetch: options.onStatus ? heard(authorized, options.onStatus) : authorized,
        jsonSchemaValidator: remoteOutputValidator,
        ...(options.listMaxAgeMs === undefined ? {} : { listMaxAgeMs: options.listMaxAgeMs }),
      },
      this.clock,
    );
    return new RemoteSource(live, oauth ? () => oauth.secrets(record) : () => secrets);
  }

  /**
   * Transport liveness without credentials: one JSON-RPC `ping` POSTed bare. Any HTTP answer
   * below 500 — a 401 or a 400 for a missing session included — means the server is there and
   * talking; a refused connection, a timeout or a 5xx means it is not.
   */
  async reachable(url: string): Promise<{ ok: boolean; detail?: string }> {
    const fetch = guardedFetch({
      allowPrivate: this.settings.allowPrivateAddresses,
      timeoutMs: this.settings.requestTimeoutMs,
      maxResponseBytes: 64 * 1024,
      ...(this.log ? { log: this.log } : {}),
    });
    try {
      const response = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
      });
      await response.body?.cancel();
      return response.status < 500 ? { ok: true } : { ok: false, detail: `HTTP ${response.status}` };
    } catch (error) {
      // A redirect is an answer below 500: the server is there, though no request follows it.
      if (error instanceof RedirectRefused) return { ok: true };
      // Every member reads this; a TLS or parser error's own text can quote the server (its
      // certificate, its bytes), so it is told as every other failure of the server is.
      return { ok: false, detail: String((retold(error, []) as Error).message).slice(0, 200) };
    }
  }
}

/** `fetch`, with each answer's status told to `onStatus` before its body is read. */
function heard(fetch: FetchLike, onStatus: (status: number) => void): FetchLike {
  return async (url, init) => {
    const response = await fetch(url, init);
    onStatus(response.status);
    return response;
  };
}

/**
 * Each request with the connection's current access token, waited for no longer than the request
 * itself. A 401 gets one retry with a token refreshed past the refused one; a 403
 * `insufficient_scope` starts a step-up and fails the request with StepUpRequired, which the call
 * gate answers as a tool error.
 */
export function authorizedFetch(record: ConnectionRecord, fetch: FetchLike, oauth: OAuthBearers): FetchLike {
  const send = (url: string | URL, init: RequestInit | undefined, token: string) => {
    const headers = new Headers(init?.headers);
    headers.set("authorization", `Bearer ${token}`);
    return fetch(url, { ...init, headers });
  };
  // The request's signal (its client closed: a photograph a disable, remove or stop cut) ends the
  // wait for a token, not the token's refresh, whose answer is still sealed (adr/0122, amended;
  // test/integration/connections-oauth-token-wait.test.ts).
  const bearer = (init: RequestInit | undefined, rejected?: string) => {
    // A request already cut (its client closed as the server answered 401) asks for no token, nor
    // is one cut while its token set is read given a refresh: it would be for nobody
    // (authorized-fetch.test.ts; connection-tokens.test.ts "cut while").
    init?.signal?.throwIfAborted();
    const token = oauth.bearer(record, rejected, init?.signal ?? undefined);
    return init?.signal ? untilAborted(token, init.signal) : token;
  };
  return async (url, init) => {
    const token = await bearer(init);
    let response = await send(url, init, token);
    if (response.status === 401) {
      await response.body?.cancel().catch(() => undefined);
      response = await send(url, init, await bearer(init, token));
    }
    const challenge = insufficientScope(response);
    if (challenge) {
      await response.body?.cancel().catch(() => undefined);
      const link = await oauth.stepUp(record, challenge.scope);
      throw new StepUpRequired(record.name, challenge.scope, link, record.owner);
    }
    return response;
  };
}
