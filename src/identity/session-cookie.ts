import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto";
import { parse, serialize } from "hono/utils/cookie";

// The cookie primitives every browser-facing cookie Atrium sets is built from: one secret,
// a key derived per use (a session cookie's key cannot verify a login-state cookie), HMAC
// signatures compared in constant time, and one way to write the Set-Cookie line.

/** What a derived key is for; each gets its own HKDF `info`, so no key serves two uses. */
export type CookieKeyPurpose = "session" | "login-state";

const HKDF_SALT = "atrium cookie keys";
const KEY_BYTES = 32;

/** An HMAC-SHA256 (or AES-256) key derived from the configured secret for one purpose. */
export function deriveCookieKey(secret: string, purpose: CookieKeyPurpose): Uint8Array {
  return new Uint8Array(hkdfSync("sha256", secret, HKDF_SALT, `atrium ${purpose} v1`, KEY_BYTES));
}

/** `<value>.<base64url HMAC-SHA256 of value>`; the value must not contain a dot. */
export function signValue(key: Uint8Array, value: string): string {
  return `${value}.${mac(key, value)}`;
}

/**
 * The value inside `signed` when its signature is right, else `undefined`. The comparison
 * is constant-time, so a forger learns nothing from how long a wrong guess took.
 */
export function verifySignedValue(key: Uint8Array, signed: string): string | undefined {
  const dot = signed.lastIndexOf(".");
  if (dot <= 0) return undefined;
  const value = signed.slice(0, dot);
  const given = Buffer.from(signed.slice(dot + 1), "base64url");
  const expected = Buffer.from(mac(key, value), "base64url");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  return value;
}

function mac(key: Uint8Array, value: string): string {
  return createHmac("sha256", key).update(value).digest("base64url");
}

export interface CookieAttributes {
  path: string;
  /** Seconds the browser keeps it; 0 deletes it. */
  maxAgeSeconds: number;
  secure: boolean;
}

/** A Set-Cookie value: always HttpOnly and SameSite=Lax, never readable by a page's script. */
export function setCookie(name: string, value: string, attributes: CookieAttributes): string {
  // hono's serializer refuses a `__Host-`/`__Secure-` name without the attributes its prefix demands.
  return serialize(name, value, {
    path: attributes.path,
    maxAge: attributes.maxAgeSeconds,
    httpOnly: true,
    sameSite: "Lax",
    secure: attributes.secure,
  });
}

/** The named cookie of a request, or `undefined`. */
export function readCookie(request: Request, name: string): string | undefined {
  const header = request.headers.get("cookie");
  if (header === null) return undefined;
  return parse(header, name)[name];
}
