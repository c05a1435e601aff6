import { decodeJwt, decodeProtectedHeader, type JWTPayload, type ProtectedHeaderParameters } from "jose";
import type { OidcAuth } from "../../instance/schema.ts";
import { CLOCK_TOLERANCE_SECONDS } from "../../kernel/clock.ts";
import { ACCEPTED_ALGORITHMS } from "../oidc-client.ts";

/**
 * Whether a bearer token would fail verification whatever the provider's keys say, so it can be
 * refused without them: not a compact JWS with a JSON header and claims, an algorithm never
 * accepted, another issuer, another audience, or no expiry or one past the tolerance. Each test is
 * one `jwtVerify` makes too, with the same options (providers/oidc.ts), so this only ever refuses
 * early; a token it lets by is still verified in full.
 *
 * Fetching the keys first answered such a token `503` while the provider was down, so a client
 * retried a token that could never work instead of signing in again, and every one of them sent
 * Atrium to the provider (test/integration/oidc-provider-down.test.ts).
 */
export function unverifiableToken(token: string, auth: OidcAuth, nowMs: number): boolean {
  let header: ProtectedHeaderParameters;
  let payload: JWTPayload;
  try {
    header = decodeProtectedHeader(token);
    payload = decodeJwt(token);
  } catch {
    return true;
  }
  if (typeof header.alg !== "string" || !ACCEPTED_ALGORITHMS.includes(header.alg)) return true;
  if (payload.iss !== auth.issuer) return true;
  const audiences = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
  if (!audiences.includes(auth.audience)) return true;
  const nowSeconds = Math.floor(nowMs / 1000);
  return typeof payload.exp !== "number" || payload.exp <= nowSeconds - CLOCK_TOLERANCE_SECONDS;
}
