import { equalSecrets, hashSecret, randomSecret } from "./secrets.ts";

// RFC 7636 §4.1: 43–128 characters of the unreserved set.
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;

/** The S256 code challenge of a verifier: base64url(SHA-256(ASCII(verifier))). */
export function s256(verifier: string): string {
  return hashSecret(verifier);
}

/** A fresh verifier and its S256 challenge, for when Atrium is the client (browser sign-in). */
export function createPkcePair(): { verifier: string; challenge: string } {
  const verifier = randomSecret(32);
  return { verifier, challenge: s256(verifier) };
}

/** Whether `verifier` is well-formed and its S256 challenge is `challenge`. `plain` is never accepted. */
export function verifyPkce(verifier: string, challenge: string): boolean {
  if (!VERIFIER.test(verifier)) return false;
  return equalSecrets(s256(verifier), challenge);
}
