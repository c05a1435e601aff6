import { randomBytes } from "node:crypto";
import { InvalidInput } from "../../errors.ts";
import { isPersonalSourceName } from "../../sources/tool-names.ts";
import { isUnshowable } from "../../text.ts";

/**
 * How Atrium authenticates to the server: nothing, one header or one query parameter whose value
 * is sealed (adr/0108), or OAuth.
 */
export type StoredAuth =
  | { kind: "none" }
  | { kind: "static"; header: string; credential: string }
  | { kind: "query"; param: string; credential: string }
  | StoredOAuth;

/** An OAuth connection: where its tokens come from, and the sealed token set once authorized. */
export interface StoredOAuth {
  kind: "oauth";
  /** The authorization server's issuer, fixed at creation: discovery naming another is refused. */
  issuer: string;
  /** The scopes asked for at creation (or last re-authorization); empty when the server chose. */
  scopes: string[];
  /** The scopes the last activation was granted. */
  granted?: string[];
  /** The sealed token set's credential id; absent while pending_auth. */
  tokens?: string;
  /** When the current token set was activated: half of the activation compare-and-swap. */
  activatedAt?: string;
}

/** What a caller asks for; a static value is sealed on arrival and never answered back. */
export type AuthRequest =
  | { kind: "none" }
  | { kind: "static"; header: string; value: string }
  | { kind: "query"; param: string; value: string }
  | { kind: "oauth"; scopes?: string[] };

/** The credential store id of the value a static or query credential sealed, if it has one. */
export function sealedCredentialOf(auth: StoredAuth): string | undefined {
  return auth.kind === "static" || auth.kind === "query" ? auth.credential : undefined;
}

/** A connection as stored at `<ws>/connections/servers/<name>/connection.json`. */
export interface ConnectionRecord {
  /** `con_` + 24 hex: what a sealed credential is bound to. */
  id: string;
  name: string;
  workspaceId: string;
  url: string;
  auth: StoredAuth;
  createdAt: string;
  createdBy: string;
  /** 1 at creation; each completed re-authorization after the connection was ever active adds 1. */
  authorizationGeneration: number;
  /** The snapshot its tools are served from and its calls checked against. */
  snapshotVersion: number;
  disabled: boolean;
  /**
   * Set on a personal connection (ADR 0042): the member it belongs to, under whose folder it is
   * stored and keyed; its `workspaceId` then names only the workspace it was added from.
   */
  owner?: string;
}

export type ConnectionState =
  | "pending_auth"
  | "running"
  | "degraded"
  | "reauth_required"
  | "disabled"
  | "not_served";

/** One loop's last look: when, what it found, how long it took. */
export interface Observation {
  at: string;
  outcome: "ok" | "failed";
  latencyMs: number;
  detail?: string;
}

/** The HealthMonitor's own fields (`transport.json`); the revalidator never writes them. */
export interface TransportHealth {
  up: boolean;
  failures: number;
  last?: Observation;
  /** When the next reconnect is tried while down (epoch ms); one more than the longest backoff ahead is not waited for (ADR 0168). */
  retryAt?: number;
}

/** The ConnectionRevalidator's own fields (`credential.json`); the monitor never writes them. */
export interface CredentialHealth {
  lapsed: boolean;
  last?: Observation;
}

/**
 * Whether a stored connection is out of service whatever its server does: an admin disabled it, or
 * a platform app holds its name (adr/0128). Neither is served, publishes a skill, or is looked at
 * by a health loop (adr/0134).
 */
export function outOfService(record: ConnectionRecord, appNames: readonly string[]): boolean {
  return record.disabled || appNames.includes(record.name);
}

/**
 * Whether a connection's tools and skills are served: in service, and authorized (it has a
 * snapshot to serve from). The one rule its registry, its published skills and Serving follow.
 */
export function isServed(record: ConnectionRecord, appNames: readonly string[]): boolean {
  return !outOfService(record, appNames) && record.snapshotVersion > 0;
}

/**
 * The state a client sees, derived from the record and both loops' own conclusions. A connection
 * out of service says why instead: the loops do not look at it, so what they last wrote is old.
 */
export function deriveState(
  record: ConnectionRecord,
  transport: TransportHealth,
  credential: CredentialHealth,
  appNames: readonly string[],
): ConnectionState {
  if (record.disabled) return "disabled";
  if (outOfService(record, appNames)) return "not_served";
  if (credential.lapsed) return "reauth_required";
  if (record.snapshotVersion === 0) return "pending_auth";
  return transport.up ? "running" : "degraded";
}

const NAME = /^[a-z][a-z0-9-]{0,62}$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;
// Headers Atrium owns on the way out: the transport sets them, a connection may not.
const RESERVED_HEADERS = new Set([
  "host",
  "content-type",
  "content-length",
  "accept",
  "mcp-protocol-version",
  "mcp-session-id",
  "mcp-method",
  "mcp-name",
  "connection",
  "transfer-encoding",
]);
const MAX_VALUE_CHARS = 4096;
const MAX_URL_CHARS = 2048;
/** A query parameter's name a query credential may take: unreserved URL characters, sent as they are. */
const QUERY_PARAM = /^[A-Za-z0-9._~-]{1,128}$/;

/**
 * The words of a query parameter's name that say it carries a credential (adr/0108). A name is
 * split into words at `_`, `-`, `.` and a lower-to-upper case change, lowercased: `api_key`,
 * `X-Api-Key`, `accessToken` and `client.secret` all hold one. `JOINED` are such names written as
 * one word. A URL whose query names one is refused, since the URL is shown to every member. The
 * same words judge a catalog entry's headers and other inputs (catalog-secrets.ts). `session` alone
 * is not one: it names a session's affinity or timeout as often as its id (`X-Session-Affinity:
 * sticky` was refused); the id is `sessionid` (`session_id`, `X-Session-Id`), or a token or key.
 */
const CREDENTIAL_WORDS: ReadonlySet<string> = new Set([
  "key",
  "apikey",
  "token",
  "secret",
  "password",
  "passwd",
  "pwd",
  "passphrase",
  "auth",
  "authorization",
  "credential",
  "credentials",
  "sig",
  "signature",
  "jwt",
  "bearer",
  "sessionid",
]);
const JOINED_CREDENTIAL_NAMES: ReadonlySet<string> = new Set([
  "accesstoken",
  "authtoken",
  "idtoken",
  "refreshtoken",
  "accesskey",
  "secretkey",
  "privatekey",
  "clientsecret",
  "xapikey",
]);

/**
 * `url` as a member is shown it: the value of each query parameter whose name says it carries a
 * credential replaced by `redacted`. Only a record stored before such URLs were refused holds one.
 */
export function shownUrl(url: string): string {
  if (!URL.canParse(url)) return url;
  const parsed = new URL(url);
  const named = [...new Set(parsed.searchParams.keys())].filter(namesCredential);
  for (const name of named) parsed.searchParams.set(name, "redacted");
  return named.length === 0 ? url : parsed.href;
}

/** Whether a query parameter's name says it carries a credential (CREDENTIAL_WORDS). */
export function namesCredential(param: string): boolean {
  const words = param
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .toLowerCase()
    .split(/[_.\-\s]+/)
    .filter((word) => word !== "");
  // Two words written apart are the word written as one (`session_id`, `pass_word`).
  const pairs = words.slice(1).map((word, i) => `${words[i]}${word}`);
  return (
    [...words, ...pairs].some((word) => CREDENTIAL_WORDS.has(word)) ||
    JOINED_CREDENTIAL_NAMES.has(words.join(""))
  );
}

/** The ids of the sealed credentials a stored connection's auth names (its value, or its token set). */
export function sealedCredentialIds(auth: StoredAuth): string[] {
  const sealed = sealedCredentialOf(auth);
  if (sealed !== undefined) return [sealed];
  if (auth.kind === "oauth" && auth.tokens !== undefined) return [auth.tokens];
  return [];
}

export function newConnectionId(): string {
  return `con_${randomBytes(12).toString("hex")}`;
}

/** Words the connection routes use after `/connections/`, so no connection may be named one. */
const ROUTE_WORDS = new Set(["grants"]);

/** A connection name is its tools' `<source>`: lowercase words, and not a platform app's name. */
export function checkConnectionName(name: unknown, taken: readonly string[]): string {
  if (typeof name === "string" && isPersonalSourceName(name)) {
    throw new InvalidInput(
      'The "my_" prefix is for personal connections: send "personal": true and the name without it ("my_" is added to its tools).',
    );
  }
  if (typeof name === "string" && ROUTE_WORDS.has(name))
    throw new InvalidInput(`"${name}" is a word the connection routes use; choose another name.`);
  if (typeof name !== "string" || !NAME.test(name)) {
    throw new InvalidInput(
      'A connection name is 1 to 63 lowercase letters, digits and hyphens, starting with a letter (e.g. "github").',
    );
  }
  if (taken.includes(name))
    throw new InvalidInput(`"${name}" is the name of a platform app; choose another.`);
  return name;
}

export function checkServerUrl(url: unknown): URL {
  if (typeof url !== "string" || url.length > MAX_URL_CHARS || !URL.canParse(url)) {
    throw new InvalidInput('"url" is the server\'s MCP endpoint, an absolute https URL.');
  }
  const parsed = new URL(url);
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
    throw new InvalidInput('"url" is an https URL (http only for a local server the operator allows).');
  }
  if (parsed.username || parsed.password) {
    throw new InvalidInput('"url" may not carry a user name or password; use "auth" for credentials.');
  }
  // The URL is stored in the record and shown to every member: a credential in its query would be
  // read by all of them (test/integration/connections-query-credential.test.ts).
  const named = [...parsed.searchParams.keys()].find(namesCredential);
  if (named !== undefined) {
    const shown = QUERY_PARAM.test(named) ? `"${named}"` : "a parameter";
    throw new InvalidInput(
      `"url" carries what looks like a credential in its query (${shown}), which every member of the ` +
        "workspace would read. Send the URL without it, and the value in " +
        `{"kind": "query", "param": "<name>", "value": "…"} as "auth" (sealed, added only when Atrium ` +
        'calls the server), or in a header with {"kind": "static", "header", "value"}.',
    );
  }
  parsed.hash = "";
  return parsed;
}

/** `auth` as a caller sent it, for a connection to `url` (checkServerUrl's). */
export function checkAuth(auth: unknown, url: URL): AuthRequest {
  if (auth === undefined) return { kind: "none" };
  const given = auth as { kind?: unknown; header?: unknown; param?: unknown; value?: unknown };
  if (typeof auth !== "object" || auth === null) throw new InvalidInput('"auth" is an object with a "kind".');
  if (given.kind === "none") return { kind: "none" };
  if (given.kind === "static") {
    if (
      typeof given.header !== "string" ||
      !HEADER_NAME.test(given.header) ||
      RESERVED_HEADERS.has(given.header.toLowerCase())
    ) {
      throw new InvalidInput(
        '"auth.header" is an HTTP header name the transport does not own, e.g. "Authorization" or "X-Api-Key".',
      );
    }
    return { kind: "static", header: given.header, value: checkValue(given.value, "header") };
  }
  if (given.kind === "query") {
    if (typeof given.param !== "string" || !QUERY_PARAM.test(given.param)) {
      throw new InvalidInput(
        '"auth.param" is the query parameter the server reads its credential from: 1 to 128 letters, ' +
          'digits, ".", "_", "~" or "-", e.g. "api_key".',
      );
    }
    if (url.searchParams.has(given.param)) {
      throw new InvalidInput(`"url" already has a "${given.param}" parameter; send the URL without it.`);
    }
    return { kind: "query", param: given.param, value: checkValue(given.value, "query parameter") };
  }
  if (given.kind === "oauth") {
    const scopes = (auth as { scopes?: unknown }).scopes;
    if (scopes === undefined) return { kind: "oauth" };
    return { kind: "oauth", scopes: checkScopes(scopes) };
  }
  throw new InvalidInput('"auth.kind" is "none", "static", "query" or "oauth".');
}

function checkValue(value: unknown, of: string): string {
  if (typeof value !== "string" || value === "" || value.length > MAX_VALUE_CHARS || isUnshowable(value)) {
    throw new InvalidInput(
      `"auth.value" is the ${of}'s value: 1 to ${MAX_VALUE_CHARS} characters on one line.`,
    );
  }
  return value;
}

const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]{1,200}$/;
export const MAX_SCOPES = 50;

/** OAuth scopes as RFC 6749 §3.3 spells a scope token: printable ASCII without space, `"` or `\`. */
export function checkScopes(scopes: unknown): string[] {
  if (
    !Array.isArray(scopes) ||
    scopes.length > MAX_SCOPES ||
    !scopes.every((scope) => typeof scope === "string" && SCOPE_TOKEN.test(scope))
  ) {
    throw new InvalidInput(
      `"auth.scopes" is a list of at most ${MAX_SCOPES} OAuth scopes, each printable ASCII without spaces, e.g. ["read", "write"].`,
    );
  }
  return [...new Set(scopes as string[])];
}
