import { createHash } from "node:crypto";
import { randomSecret } from "../crypto/secrets.ts";
import { isLoopbackHost } from "../instance/load.ts";
import { type Clock, isWithin, systemClock } from "../kernel/clock.ts";
import type { StorageLayout } from "../storage/paths.ts";
import { JsonRecords } from "../storage/records.ts";
import type { Principal } from "./principal.ts";
import {
  type CookieKeyPurpose,
  deriveCookieKey,
  readCookie,
  setCookie,
  signValue,
  verifySignedValue,
} from "./session-cookie.ts";
import { begunUnderEarlierStanding, type PersonStanding } from "./standing.ts";

/** The session cookie's name over http on a loopback host (local development). */
export const SESSION_COOKIE = "atrium_session";
/** Its name over https: `__Host-` makes the browser insist on Secure, Path=/ and no Domain. */
export const SECURE_SESSION_COOKIE = "__Host-atrium_session";

/** Expired records are swept from disk at most this often, by the next sign-in after it. */
export const SESSION_SWEEP_INTERVAL_MS = 60 * 60 * 1000;

const SESSION_ID_BYTES = 32;
// base64url of 32 bytes, a dot, base64url of a 32-byte HMAC: anything else is not ours.
const COOKIE_SHAPE = /^[A-Za-z0-9_-]{43}\.[A-Za-z0-9_-]{43}$/;

export type SessionLookup =
  /** No session cookie on the request. */
  | { kind: "none" }
  /** A cookie that is forged, unknown, expired or ended (signed out, or begun before a deactivation). */
  | { kind: "invalid" }
  | { kind: "signed-in"; principal: Principal; sessionId: string };

/** What is kept on disk per session, under the SHA-256 of its id (never the id itself). */
interface SessionRecord {
  /** The person as the provider described them at sign-in. */
  principal: Principal;
  createdAt: string;
  expiresAt: string;
  /**
   * The person's standing id at sign-in; absent in records written before it was kept, and when
   * the person held none (ADR 0169, amended later still).
   */
  standingId?: string;
}

export interface SessionOptions {
  /** The instance's session secret; cookie keys are derived from it. */
  secret: string;
  /** Absolute lifetime: a session ends this long after sign-in, however busy. */
  maxAgeSeconds: number;
  /** Over https: the cookie is `Secure` and named with the `__Host-` prefix. */
  secureCookies: boolean;
  /** Milliseconds since the epoch; tests move it. */
  now?: Clock;
  /**
   * A person's standing in the user directory: a session begun under another standing id (before
   * their last reactivation) is over, as a consent given then is (standing.ts). Nobody holds an id
   * unless given.
   */
  standingOf?: (principalId: string) => PersonStanding;
}

/**
 * Browser sessions. The cookie carries a random id and its HMAC; the signature is checked
 * (in constant time) before any disk is touched, so a forged cookie costs a hash, not a
 * read. The record is stored under the id's SHA-256, so reading the data root does not
 * yield a cookie anyone could present.
 */
export class Sessions {
  readonly cookieName: string;
  readonly secureCookies: boolean;
  private readonly records: JsonRecords<SessionRecord>;
  private readonly key: Uint8Array;
  private readonly secret: string;
  private readonly maxAgeSeconds: number;
  /** The instance clock; sign-in's login-state cookie reads the same one. */
  readonly now: Clock;
  private readonly standingOf: (principalId: string) => PersonStanding;
  private lastSweepMs: number;

  constructor(layout: StorageLayout, options: SessionOptions) {
    this.records = new JsonRecords<SessionRecord>(layout, "sessions");
    this.secret = options.secret;
    this.key = deriveCookieKey(options.secret, "session");
    this.maxAgeSeconds = options.maxAgeSeconds;
    this.secureCookies = options.secureCookies;
    this.cookieName = options.secureCookies ? SECURE_SESSION_COOKIE : SESSION_COOKIE;
    this.now = options.now ?? systemClock;
    this.standingOf = options.standingOf ?? (() => ({}));
    // The first sweep waits an interval, so a boot followed by a sign-in does not read every record.
    this.lastSweepMs = this.now();
  }

  async lookup(request: Request): Promise<SessionLookup> {
    const cookie = readCookie(request, this.cookieName);
    if (cookie === undefined) return { kind: "none" };
    const sessionId = this.verifiedId(cookie);
    if (sessionId === undefined) return { kind: "invalid" };
    const recordId = recordIdOf(sessionId);
    const record = await this.records.get(recordId);
    if (!record) return { kind: "invalid" };
    const begunBefore = begunUnderEarlierStanding(this.standingOf(record.principal.id), {
      at: Date.parse(record.createdAt),
      standingId: record.standingId,
    });
    if (begunBefore || Date.parse(record.expiresAt) <= this.now()) {
      await this.records.delete(recordId);
      return { kind: "invalid" };
    }
    return { kind: "signed-in", principal: record.principal, sessionId };
  }

  /** Starts a session for someone the provider just vouched for; returns the Set-Cookie value. */
  async start(principal: Principal): Promise<string> {
    // Read before any await: a deactivation that lands meanwhile ends this session at the reactivation.
    const { standingId } = this.standingOf(principal.id);
    await this.sweepIfDue();
    const sessionId = randomSecret(SESSION_ID_BYTES);
    const nowMs = this.now();
    await this.records.put(recordIdOf(sessionId), {
      principal,
      createdAt: new Date(nowMs).toISOString(),
      expiresAt: new Date(nowMs + this.maxAgeSeconds * 1000).toISOString(),
      ...(standingId === undefined ? {} : { standingId }),
    });
    return this.cookie(signValue(this.key, sessionId), this.maxAgeSeconds);
  }

  /** Deletes the request's session, if it has one; returns a Set-Cookie value that clears the cookie. */
  async end(request: Request): Promise<string> {
    const cookie = readCookie(request, this.cookieName);
    const sessionId = cookie === undefined ? undefined : this.verifiedId(cookie);
    if (sessionId !== undefined) await this.records.delete(recordIdOf(sessionId));
    return this.cookie("", 0);
  }

  /**
   * A key for another short-lived cookie Atrium sets (the sign-in's login state), derived from
   * the same secret, so rotating the secret ends every session and every sign-in in flight.
   */
  cookieKey(purpose: Exclude<CookieKeyPurpose, "session">): Uint8Array {
    return deriveCookieKey(this.secret, purpose);
  }

  private verifiedId(cookie: string): string | undefined {
    if (!COOKIE_SHAPE.test(cookie)) return undefined;
    return verifySignedValue(this.key, cookie);
  }

  private cookie(value: string, maxAgeSeconds: number): string {
    return setCookie(this.cookieName, value, { path: "/", maxAgeSeconds, secure: this.secureCookies });
  }

  private async sweepIfDue(): Promise<void> {
    if (isWithin(this.now(), this.lastSweepMs, SESSION_SWEEP_INTERVAL_MS)) return;
    await this.sweep();
  }

  /** Removes records past their expiry that no browser came back with. */
  async sweep(): Promise<void> {
    const nowMs = this.now();
    this.lastSweepMs = nowMs;
    for (const id of await this.records.ids()) {
      // An unreadable record is left for an operator to look at; it must not stop a sign-in.
      const record = await this.records.get(id).catch(() => undefined);
      if (record && Date.parse(record.expiresAt) <= nowMs) await this.records.delete(id);
    }
  }
}

/** Secure cookies everywhere except plain http on a loopback host, where a browser would drop them. */
export function secureCookiesFor(publicUrl: string): boolean {
  const url = new URL(publicUrl);
  return !(url.protocol === "http:" && isLoopbackHost(url.hostname));
}

function recordIdOf(sessionId: string): string {
  return createHash("sha256").update(sessionId).digest("hex");
}
