// RFC 6750 §2.1: `Bearer <b64token>`; the scheme name is case-insensitive (RFC 9110 §11.1).
const BEARER = /^Bearer ([A-Za-z0-9._~+/=-]+)$/i;

/** The token in an Authorization header value, or `undefined` when it is not a bearer credential. */
export function bearerToken(header: string): string | undefined {
  return BEARER.exec(header)?.[1];
}
