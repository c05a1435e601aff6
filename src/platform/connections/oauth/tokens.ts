import {
  exchangeAuthorization,
  type FetchLike,
  IssuerMismatchError,
  OAuthError,
  type OAuthTokens,
  refreshAuthorization,
  startAuthorization,
  validateAuthorizationResponseIssuer,
} from "@modelcontextprotocol/client";
import type { Clock } from "../../../kernel/clock.ts";
import type { IssuedTo, OAuthClient } from "./client-identity.ts";
import { AuthorizationRefused, type AuthorizationTarget } from "./discovery.ts";

/** What a connection holds from its authorization server; sealed whole, as one credential. */
export interface TokenSet {
  accessToken: string;
  refreshToken?: string;
  /** Epoch ms after which the access token is not used; absent when the server gave no lifetime (or one not believed). */
  expiresAt?: number;
  /** Epoch ms the token set was received: with `expiresAt`, the lifetime its refresh margin is cut from. */
  receivedAt?: number;
  /** The scopes granted, space-separated (what the token answer said, else what was asked). */
  scope?: string;
  /**
   * The client the set was issued to, kept across refreshes: a refresh is made as that client
   * even after the public URL (so the redirect URI, so the registration) changed. Absent in sets
   * sealed before it was kept; they refresh as the client Atrium is there now.
   */
  issuedTo?: IssuedTo;
}

/** The callback's `iss` is not the issuer the flow started with (RFC 9207), or is missing where promised. */
export class WrongIssuer extends Error {}

/** The authorization server refused a refresh token for good (`invalid_grant`): re-authorize. */
export class RefreshRefused extends Error {}

/**
 * The scope Atrium asks for: what the admin (or a step-up) named; else what the server's 401
 * challenge asked for; else everything the protected resource lists; else none (the
 * authorization server's default).
 */
export function scopeToRequest(
  target: AuthorizationTarget,
  named: readonly string[] = [],
): string | undefined {
  if (named.length > 0) return named.join(" ");
  return (
    target.challengedScope ?? (target.scopesSupported?.length ? target.scopesSupported.join(" ") : undefined)
  );
}

/**
 * The longest authorization URL a flow keeps (flows.ts): 50 scopes of 200 characters, encoded,
 * fit with room to spare; what is longer comes from the server's own metadata or registration (its
 * endpoint, the client id it issued, the resource it names), up to the 1 MiB an OAuth answer may
 * be, and a flow held that for ten minutes, up to a thousand of them (ADR 0122, amended 2026-12-07).
 */
export const MAX_AUTHORIZATION_URL_CHARS = 32 * 1024;

/**
 * The authorization request: PKCE S256 (the SDK makes the verifier and challenge), `state`, the
 * scopes, and the `resource` indicator (RFC 8707). The verifier never leaves the server.
 */
export async function beginAuthorization(
  target: AuthorizationTarget,
  client: OAuthClient,
  request: { redirectUri: string; state: string; scope?: string },
): Promise<{ authorizationUrl: URL; codeVerifier: string }> {
  const begun = await startAuthorization(target.issuer, {
    metadata: target.metadata,
    clientInformation: client.info,
    redirectUrl: request.redirectUri,
    state: request.state,
    resource: target.resource,
    ...(request.scope ? { scope: request.scope } : {}),
  });
  const length = begun.authorizationUrl.href.length;
  if (length > MAX_AUTHORIZATION_URL_CHARS) {
    throw new AuthorizationRefused(
      `The authorization server's sign-in URL would be ${length} characters, more than the ${MAX_AUTHORIZATION_URL_CHARS} Atrium keeps for a sign-in; its authorization endpoint, the client id it issued or the resource it names is too long. Ask for fewer scopes, or have its operator shorten them.`,
    );
  }
  return begun;
}

/** Whether the authorization server promises RFC 9207 `iss` on every authorization response. */
export function promisesIss(target: AuthorizationTarget): boolean {
  return target.metadata.authorization_response_iss_parameter_supported === true;
}

/** RFC 9207: a wrong `iss` is refused, and a missing one too when the server promised to send it. */
export function checkResponseIssuer(target: AuthorizationTarget, iss: string | undefined): void {
  try {
    validateAuthorizationResponseIssuer({
      iss,
      expectedIssuer: target.issuer,
      issParameterSupported: promisesIss(target),
    });
  } catch (error) {
    if (error instanceof IssuerMismatchError) {
      throw new WrongIssuer(
        iss === undefined
          ? `The authorization response carries no "iss", though ${target.issuer} says it sends one; refused (RFC 9207).`
          : `The authorization response names another issuer than ${target.issuer}; refused (RFC 9207).`,
      );
    }
    throw error;
  }
}

/** Redeems the code (with the verifier and the resource), after checking `iss`. */
export async function redeemCode(
  target: AuthorizationTarget,
  client: OAuthClient,
  callback: {
    code: string;
    iss: string | undefined;
    codeVerifier: string;
    redirectUri: string;
    scope?: string;
  },
  fetch: FetchLike,
  clock: Clock,
): Promise<TokenSet> {
  checkResponseIssuer(target, callback.iss);
  const tokens = await exchangeAuthorization(target.issuer, {
    metadata: target.metadata,
    clientInformation: client.info,
    authorizationCode: callback.code,
    ...(callback.iss === undefined ? {} : { iss: callback.iss }),
    codeVerifier: callback.codeVerifier,
    redirectUri: callback.redirectUri,
    resource: target.resource,
    fetchFn: formBodies(fetch),
  });
  const issuedTo: IssuedTo = {
    clientId: client.info.client_id,
    how: client.how,
    redirectUri: callback.redirectUri,
  };
  return { ...tokenSet(tokens, clock, callback.scope), issuedTo };
}

/**
 * One refresh with the `resource` indicator. `invalid_grant` (revoked, expired, already used) is
 * RefreshRefused: the caller hands the connection to re-authorization and never tries it again.
 */
export async function refreshTokens(
  target: AuthorizationTarget,
  client: OAuthClient,
  current: TokenSet,
  fetch: FetchLike,
  clock: Clock,
): Promise<TokenSet> {
  if (!current.refreshToken) throw new RefreshRefused("The connection holds no refresh token.");
  let tokens: OAuthTokens;
  try {
    tokens = await refreshAuthorization(target.issuer, {
      metadata: target.metadata,
      clientInformation: client.info,
      refreshToken: current.refreshToken,
      resource: target.resource,
      fetchFn: formBodies(fetch),
    });
  } catch (error) {
    if (error instanceof OAuthError && error.code === "invalid_grant") {
      // Its description is the server's words, which may quote the token it was sent.
      throw new RefreshRefused("The authorization server refused the refresh token (invalid_grant).");
    }
    throw error;
  }
  return {
    ...tokenSet(tokens, clock, current.scope),
    ...(current.issuedTo && { issuedTo: current.issuedTo }),
  };
}

/**
 * The longest `expires_in` believed, seconds. Beyond it (or at zero or below, or not a number) the
 * lifetime is not recorded at all: the token is used until the server answers 401, which
 * refreshes it once. Believing `expires_in: 0` or `-5` would refresh before every request, and
 * `1e300` would store an `expiresAt` of Infinity, which JSON writes as null
 * (test/unit/platform/connections/oauth/connection-tokens.test.ts "expires_in").
 */
export const MAX_TOKEN_LIFETIME_S = 366 * 24 * 60 * 60;

function tokenSet(tokens: OAuthTokens, clock: Clock, askedScope?: string): TokenSet {
  const scope = tokens.scope ?? askedScope;
  const now = clock();
  const lifetime = tokens.expires_in;
  const believed =
    typeof lifetime === "number" &&
    Number.isFinite(lifetime) &&
    lifetime > 0 &&
    lifetime <= MAX_TOKEN_LIFETIME_S;
  return {
    accessToken: tokens.access_token,
    ...(tokens.refresh_token ? { refreshToken: tokens.refresh_token } : {}),
    ...(believed ? { expiresAt: now + lifetime * 1000, receivedAt: now } : {}),
    ...(scope ? { scope } : {}),
  };
}

/**
 * The SDK posts token requests with a URLSearchParams body; Atrium's guarded fetch sends strings
 * and bytes only, so the form is serialised here (its content type is already set).
 */
export function formBodies(fetch: FetchLike): FetchLike {
  return (url, init) =>
    fetch(url, init?.body instanceof URLSearchParams ? { ...init, body: init.body.toString() } : init);
}
