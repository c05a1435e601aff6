import type { JWTHeaderParameters, JWTPayload } from "jose";
import type { OidcAuth } from "../../instance/schema.ts";

// A provider signs several kinds of JWT with one key set: access tokens, ID tokens, logout
// tokens. Issuer, audience, expiry and signature cannot tell them apart, and with the
// default `auth.audience` (the client id) an ID token — which only proves that a sign-in
// happened, and reaches every page the browser visits — would pass as a bearer credential.
// Only an access token is one (ADR 0028; test/integration/oidc-token-kind.test.ts).

const ID_TOKEN_REFUSED =
  "This is an ID token, which proves a sign-in and is not a credential: send the provider's access token instead.";

/**
 * Why a verified provider JWT is not an access token, or `undefined` when it is one:
 * - RFC 9068 `typ: at+jwt` says it is one, and any other explicit type says it is not;
 * - otherwise (providers that type every JWT `JWT`, or not at all) a `nonce` marks an ID
 *   token, and so does an audience that is only Atrium's own client id, unless `azp` or
 *   `client_id` names a configured first-party client (an ID token names its audience's
 *   client, never another's).
 */
export function notAnAccessToken(
  header: JWTHeaderParameters,
  payload: JWTPayload,
  auth: OidcAuth,
): string | undefined {
  const type = mediaType(header.typ);
  if (type === "at+jwt") return undefined;
  if (type !== undefined && type !== "jwt") {
    return `This token's type is "${header.typ}", not an access token (at+jwt): send the provider's access token.`;
  }
  if (payload.nonce !== undefined) return ID_TOKEN_REFUSED;
  const audiences = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
  if (audiences.length === 1 && audiences[0] === auth.clientId && !isFirstPartyToken(payload, auth)) {
    return ID_TOKEN_REFUSED;
  }
  return undefined;
}

/** Whose token it is: `azp` (OpenID) or `client_id` (RFC 9068), checked against the configured list. */
export function isFirstPartyToken(payload: JWTPayload, auth: OidcAuth): boolean {
  const client = payload.azp ?? payload.client_id;
  return typeof client === "string" && auth.firstPartyClients.includes(client);
}

/** RFC 7515 §4.1.9: `typ` is a media type, compared case-insensitively, `application/` optional. */
function mediaType(typ: string | undefined): string | undefined {
  return typ?.toLowerCase().replace(/^application\//, "");
}
