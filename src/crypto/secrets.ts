import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/** A fresh random value of `bytes` bytes, base64url (32 bytes = 256 bits, 43 characters). */
export function randomSecret(bytes = 32): string {
  return randomBytes(bytes).toString("base64url");
}

/**
 * How a secret (code, refresh token, client secret) is stored: its SHA-256, base64url. The
 * values are 256-bit random, so a plain digest is enough; a stolen file yields no usable secret.
 */
export function hashSecret(value: string): string {
  return createHash("sha256").update(value, "utf8").digest("base64url");
}

/** Compares two strings in time that does not depend on where they differ. */
export function equalSecrets(a: string, b: string): boolean {
  // Hashing first gives equal-length inputs, so not even the length leaks.
  return timingSafeEqual(createHash("sha256").update(a).digest(), createHash("sha256").update(b).digest());
}
