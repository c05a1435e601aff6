import type { IncomingMessage } from "node:http";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP } from "node:net";
import { isLoopbackHost } from "../instance/load.ts";
import { CLIENT_METADATA_FETCHES_PER_HOUR_DEFAULT } from "../instance/schema.ts";
import { type Clock, systemClock } from "../kernel/clock.ts";
import { checkClientMetadata } from "./client-rules.ts";
import { OAuthError } from "./oauth-error.ts";
import type { OAuthClientInformationFull } from "./oauth-types.ts";
import { FixedWindowLimit } from "./rate-limit.ts";
import { checkAddress, ForbiddenAddress, guardedLookup } from "./ssrf-guard.ts";

// Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document, used by MCP
// 2025-11-25): a client_id that is an https URL names the JSON document that describes the
// client. Atrium fetches it once, through the SSRF guard, and keeps it for a while.

export const FETCH_TIMEOUT_MS = 5_000;
export const MAX_DOCUMENT_BYTES = 64 * 1024;
export const MAX_CACHE_SECONDS = 60 * 60;
export const MAX_CACHED_DOCUMENTS = 500;
const MAX_CLIENT_ID_CHARS = 2048;
const HOUR_MS = 60 * 60 * 1000;

/** Whether a client_id is meant as a metadata document URL (rather than a registered id). */
export function isClientMetadataUrl(clientId: string): boolean {
  return clientId.startsWith("https://") || clientId.startsWith("http://");
}

interface Cached {
  client: OAuthClientInformationFull;
  expiresAt: number;
}

interface Fetched {
  body: unknown;
  maxAgeSeconds: number;
}

export interface ClientMetadataOptions {
  /** instance.json `oauth.clientMetadataDocuments.allowPrivateAddresses`: local development and tests. */
  allowPrivate: boolean;
  /**
   * instance.json `oauth.clientMetadataFetchesPerHour`: documents fetched (not served from
   * the cache) on behalf of one caller per hour: a signed-in person at /oauth/authorize, else the
   * connecting address. Anyone can name any URL as a client_id, so without it one caller could
   * make Atrium fetch without end.
   */
  fetchesPerHour?: number;
  clock?: Clock;
  timeoutMs?: number;
}

export class ClientMetadataDocuments {
  private readonly cache = new Map<string, Cached>();
  private readonly inFlight = new Map<string, Promise<OAuthClientInformationFull>>();
  private readonly allowPrivate: boolean;
  private readonly clock: Clock;
  private readonly timeoutMs: number;
  private readonly fetchLimit: FixedWindowLimit;

  constructor(options: ClientMetadataOptions) {
    this.allowPrivate = options.allowPrivate;
    this.clock = options.clock ?? systemClock;
    this.timeoutMs = options.timeoutMs ?? FETCH_TIMEOUT_MS;
    this.fetchLimit = new FixedWindowLimit(
      options.fetchesPerHour ?? CLIENT_METADATA_FETCHES_PER_HOUR_DEFAULT,
      HOUR_MS,
      this.clock,
    );
  }

  /**
   * The client a metadata document URL describes; an invalid_client OAuthError saying why when it
   * cannot be used. A fetch is charged to `caller` (a signed-in person's key or a connecting
   * address, adr/0156), and refused with too_many_requests past the hourly limit; a cached or
   * in-flight document is free.
   */
  async resolve(clientId: string, caller: string): Promise<OAuthClientInformationFull> {
    const cached = this.cache.get(clientId);
    if (cached && cached.expiresAt > this.clock()) return cached.client;
    this.cache.delete(clientId);
    // Concurrent requests for one client (authorize, then token) share one fetch.
    let pending = this.inFlight.get(clientId);
    if (!pending) {
      const wait = this.fetchLimit.take(caller);
      if (wait > 0) {
        throw new OAuthError(
          "too_many_requests",
          `Too many client metadata documents were fetched on your behalf this hour; try again in ${wait} s.`,
        );
      }
      pending = this.load(clientId).finally(() => this.inFlight.delete(clientId));
      this.inFlight.set(clientId, pending);
    }
    return pending;
  }

  /** The name of a document still cached; never fetches. */
  cachedName(clientId: string): string | undefined {
    const cached = this.cache.get(clientId);
    return cached && cached.expiresAt > this.clock() ? cached.client.client_name : undefined;
  }

  private async load(clientId: string): Promise<OAuthClientInformationFull> {
    const url = this.checkUrl(clientId);
    const where = `The client metadata document at ${shown(clientId)}`;
    let fetched: Fetched;
    try {
      fetched = await fetchJson(url, this.allowPrivate, this.timeoutMs);
    } catch (error) {
      throw new OAuthError("invalid_client", `${where} ${describeFailure(error, this.timeoutMs)}.`);
    }
    const client = documentClient(fetched.body, clientId, where);
    if (fetched.maxAgeSeconds > 0) {
      if (this.cache.size >= MAX_CACHED_DOCUMENTS) {
        const oldest = this.cache.keys().next().value;
        if (oldest !== undefined) this.cache.delete(oldest);
      }
      this.cache.set(clientId, { client, expiresAt: this.clock() + fetched.maxAgeSeconds * 1000 });
    }
    return client;
  }

  private checkUrl(clientId: string): URL {
    const refuse = (why: string): never => {
      throw new OAuthError("invalid_client", `The client_id ${shown(clientId)} ${why}.`);
    };
    if (clientId.length > MAX_CLIENT_ID_CHARS) refuse(`is longer than ${MAX_CLIENT_ID_CHARS} characters`);
    let url: URL;
    try {
      url = new URL(clientId);
    } catch {
      return refuse("is not a valid URL");
    }
    const localHttp = url.protocol === "http:" && this.allowPrivate && isLoopbackHost(url.hostname);
    if (url.protocol !== "https:" && !localHttp) {
      refuse("must be an https URL to be used as a client metadata document");
    }
    if (url.username !== "" || url.password !== "") refuse("must not contain a user name or password");
    if (url.hash !== "" || clientId.includes("#")) refuse("must not contain a fragment");
    if (url.pathname === "/") refuse("must have a path naming the document");
    // The document must name itself by exactly this string, so only a canonical URL can.
    if (url.href !== clientId) refuse("is not in canonical form (dot segments, default port, escapes)");
    return url;
  }
}

/** Checks the fetched JSON as client metadata that names itself `clientId` and has no secret. */
function documentClient(body: unknown, clientId: string, where: string): OAuthClientInformationFull {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new OAuthError("invalid_client", `${where} is not a JSON object.`);
  }
  const document = body as Record<string, unknown>;
  if (document.client_id !== clientId) {
    throw new OAuthError(
      "invalid_client",
      `${where} names a different client_id; it must be exactly its own URL.`,
    );
  }
  if ("client_secret" in document || "client_secret_expires_at" in document) {
    throw new OAuthError(
      "invalid_client",
      `${where} contains a client secret, which a public document must not.`,
    );
  }
  const method = document.token_endpoint_auth_method;
  if (method !== undefined && method !== "none") {
    throw new OAuthError(
      "invalid_client",
      `${where} asks for token_endpoint_auth_method "${String(method)}"; only "none" is possible.`,
    );
  }
  try {
    return { ...checkClientMetadata(document), client_id: clientId };
  } catch (error) {
    if (error instanceof OAuthError)
      throw new OAuthError("invalid_client", `${where} is not usable: ${error.message}`);
    throw error;
  }
}

/**
 * One GET with no redirects followed, through the SSRF guard, with a deadline and a size
 * cap. `maxAgeSeconds` is how long the answer may be kept: its Cache-Control max-age, at
 * most an hour, and 0 for no-store or no-cache.
 */
function fetchJson(url: URL, allowPrivate: boolean, timeoutMs: number): Promise<Fetched> {
  const hostname = url.hostname.replace(/^\[|\]$/g, "");
  // An IP literal is connected to without a lookup, so it is checked here instead.
  if (isIP(hostname) !== 0) checkAddress(url.hostname, hostname, allowPrivate);
  const request = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: "GET",
        headers: { accept: "application/json" },
        lookup: guardedLookup(allowPrivate),
        agent: false,
        signal: AbortSignal.timeout(timeoutMs),
      },
      (res) => {
        readJson(res).then(
          (body) => resolve({ body, maxAgeSeconds: maxAge(res.headers["cache-control"]) }),
          reject,
        );
      },
    );
    req.on("error", reject);
    req.end();
  });
}

async function readJson(res: IncomingMessage): Promise<unknown> {
  const status = res.statusCode ?? 0;
  if (status !== 200) {
    res.resume();
    throw new FetchProblem(
      status >= 300 && status < 400
        ? `answered HTTP ${status}, a redirect, which is not followed`
        : `answered HTTP ${status} instead of 200`,
    );
  }
  const type = (res.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  if (type !== "application/json" && !type.endsWith("+json")) {
    res.resume();
    throw new FetchProblem(`is served as "${type || "no content type"}" rather than application/json`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res) {
    size += (chunk as Buffer).length;
    if (size > MAX_DOCUMENT_BYTES) {
      res.destroy();
      throw new FetchProblem(`is larger than ${MAX_DOCUMENT_BYTES / 1024} KiB`);
    }
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown;
  } catch {
    throw new FetchProblem("is not valid JSON");
  }
}

class FetchProblem extends Error {}

function maxAge(header: string | undefined): number {
  const directives = (header ?? "").toLowerCase();
  if (/\b(no-store|no-cache)\b/.test(directives)) return 0;
  const seconds = /\bmax-age=(\d+)/.exec(directives)?.[1];
  return seconds === undefined ? MAX_CACHE_SECONDS : Math.min(Number(seconds), MAX_CACHE_SECONDS);
}

function describeFailure(error: unknown, timeoutMs: number): string {
  // What a name resolves to, and what kind of address that is, stay in this process: an
  // answer that said so would map the internal network for whoever asks (issue 10, Security 6).
  if (error instanceof ForbiddenAddress)
    return "is not at a public internet address, which this instance requires";
  if (error instanceof FetchProblem) return error.message;
  const name = (error as Error).name;
  if (name === "TimeoutError" || name === "AbortError") {
    return `did not answer within ${timeoutMs / 1000} s`;
  }
  const code = (error as NodeJS.ErrnoException).code;
  return `could not be fetched (${code ?? (error as Error).message})`;
}

function shown(clientId: string): string {
  return clientId.length > 200 ? `${clientId.slice(0, 200)}…` : clientId;
}
