import { equalSecrets, hashSecret } from "./secrets.ts";

// RFC 7636 §4.1: 43–128 characters of the unreserved set.
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;

/** The S256 code challenge of a verifier: base64url(SHA-256(ASCII(verifier))). */
export function s256(verifier: string): string {
  return hashSecret(verifier);
}

/** Whether `verifier` is well-formed and its S256 challenge is `challenge`. `plain` is never accepted. */
export function verifyPkce(verifier: string, challenge: string): boolean {
  if (!VERIFIER.test(verifier)) return false;
  return equalSecrets(s256(verifier), challenge);
}
