import { randomBytes } from "node:crypto";
import { hashSecret, randomSecret } from "../crypto/secrets.ts";

/**
 * What a grant's id and its refresh tokens look like. A refresh token is `<grantId>.<secret>`,
 * so finding its grant is one file read, and only its hash is ever stored.
 */
const GRANT_ID = /^gnt_[0-9a-f]{32}$/;
const REFRESH_SECRET = /^[A-Za-z0-9_-]{43}$/;

export function newGrantId(): string {
  return `gnt_${randomBytes(16).toString("hex")}`;
}

export function isGrantId(value: string): boolean {
  return GRANT_ID.test(value);
}

/** A new refresh token of `grantId`, and the hash the grant keeps of it. */
export function newRefreshToken(grantId: string): { token: string; hash: string } {
  const token = `${grantId}.${randomSecret(32)}`;
  return { token, hash: hashSecret(token) };
}

/** Whether a string has the shape of an Atrium refresh token. */
export function isRefreshTokenShaped(token: string): boolean {
  return grantIdOf(token) !== undefined;
}

/** The grant a refresh token names, if it has a refresh token's shape. */
export function grantIdOf(token: string): string | undefined {
  const dot = token.indexOf(".");
  if (dot === -1) return undefined;
  const grantId = token.slice(0, dot);
  return GRANT_ID.test(grantId) && REFRESH_SECRET.test(token.slice(dot + 1)) ? grantId : undefined;
}
