import { createRemoteJWKSet, customFetch, type FetchImplementation, type JWTPayload, jwtVerify } from "jose";
import type { OidcAuth } from "../instance/schema.ts";
import { CLOCK_TOLERANCE_SECONDS, type Clock, isWithin, systemClock } from "../kernel/clock.ts";

// Atrium as an OpenID Connect relying party: discovery, the provider's key set, the
// authorization URL, the code exchange and ID token verification. One instance serves both
// browser sign-in and bearer-token checks, so the provider is discovered once. Nothing here
// keeps per-browser state; signin/login-state.ts does.

// Asymmetric algorithms only: `none` and HMAC (which a public key could be abused to forge) are never accepted.
export const ACCEPTED_ALGORITHMS = ["RS256", "PS256", "ES256", "ES384", "EdDSA"];

const PROVIDER_TIMEOUT_MS = 10_000;
/** Discovery is fetched again after this long, so a provider's moved endpoint is followed without a restart. */
export const DISCOVERY_TTL_MS = 60 * 60 * 1000;
/**
 * A failed discovery answers for this long before the next request tries again: retried at once,
 * every bearer request and sign-in while the provider is down was one more fetch to it.
 */
export const DISCOVERY_RETRY_MS = 5_000;

/** Why a sign-in could not finish; the route maps each to a page, and logs only this code. */
export type SignInFailure =
  | "provider_unavailable"
  | "discovery_invalid"
  | "token_exchange_failed"
  | "id_token_invalid";

export class SignInFailed extends Error {
  constructor(
    readonly reason: SignInFailure,
    message: string,
  ) {
    super(message);
    this.name = "SignInFailed";
  }
}

/**
 * The provider's key set could not be fetched: no answer, a timeout, or an answer other than 200.
 * A provider that is down, not a token that fails: the caller answers 503, never 401.
 */
export class ProviderKeysUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ProviderKeysUnavailable";
  }
}

/** The parts of the provider's discovery document sign-in uses. */
export interface ProviderMetadata {
  issuer: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  jwksUri: string;
  /** RFC 9207: the provider names itself in `iss` on every authorization response. */
  issParameterSupported: boolean;
}

/** What the token endpoint answered that sign-in uses; an access token may be opaque. */
export interface TokenSet {
  idToken: string;
  accessToken: string | undefined;
}

export interface AuthorizationRequest {
  redirectUri: string;
  state: string;
  nonce: string;
  codeChallenge: string;
}

type KeySet = ReturnType<typeof createRemoteJWKSet>;

export class OidcClient {
  private discovered: { atMs: number; ttlMs: number; metadata: Promise<ProviderMetadata> } | undefined;
  private keys: { uri: string; set: KeySet } | undefined;
  private keysFailedAtMs: number | undefined;

  constructor(
    readonly auth: OidcAuth,
    private readonly now: Clock = systemClock,
  ) {}

  /**
   * The provider's discovery document, one fetch at a time: cached for DISCOVERY_TTL_MS, a failure
   * for DISCOVERY_RETRY_MS from when it failed (test/unit/identity/oidc-client.test.ts "discovery"),
   * neither across a clock stepped back behind it (isWithin).
   */
  metadata(): Promise<ProviderMetadata> {
    const nowMs = this.now();
    if (!this.discovered || !isWithin(nowMs, this.discovered.atMs, this.discovered.ttlMs)) {
      const metadata = discover(this.auth.issuer);
      this.discovered = { atMs: nowMs, ttlMs: DISCOVERY_TTL_MS, metadata };
      metadata.catch(() => {
        if (this.discovered?.metadata !== metadata) return;
        this.discovered = { atMs: this.now(), ttlMs: DISCOVERY_RETRY_MS, metadata };
      });
    }
    return this.discovered.metadata;
  }

  async authorizationUrl(request: AuthorizationRequest): Promise<string> {
    const url = new URL((await this.metadata()).authorizationEndpoint);
    url.searchParams.set("response_type", "code");
    url.searchParams.set("client_id", this.auth.clientId);
    url.searchParams.set("redirect_uri", request.redirectUri);
    url.searchParams.set("scope", this.auth.scopes.join(" "));
    url.searchParams.set("state", request.state);
    url.searchParams.set("nonce", request.nonce);
    url.searchParams.set("code_challenge", request.codeChallenge);
    url.searchParams.set("code_challenge_method", "S256");
    return url.href;
  }

  /** Trades the authorization code for tokens at the token endpoint. */
  async exchangeCode(code: string, redirectUri: string, codeVerifier: string): Promise<TokenSet> {
    const metadata = await this.metadata();
    const body = new URLSearchParams({
      grant_type: "authorization_code",
      code,
      redirect_uri: redirectUri,
      code_verifier: codeVerifier,
    });
    const headers: Record<string, string> = {
      "content-type": "application/x-www-form-urlencoded",
      accept: "application/json",
    };
    switch (this.auth.clientAuthMethod) {
      case "client_secret_basic": {
        // RFC 6749 §2.3.1: each part is form-encoded before the two are joined and base64'd.
        const pair = `${formEncode(this.auth.clientId)}:${formEncode(this.clientSecret())}`;
        headers.authorization = `Basic ${Buffer.from(pair).toString("base64")}`;
        break;
      }
      case "client_secret_post":
        body.set("client_id", this.auth.clientId);
        body.set("client_secret", this.clientSecret());
        break;
      case "none":
        body.set("client_id", this.auth.clientId);
        break;
    }
    let response: Response;
    try {
      response = await fetch(metadata.tokenEndpoint, {
        method: "POST",
        headers,
        body,
        redirect: "error",
        signal: AbortSignal.timeout(PROVIDER_TIMEOUT_MS),
      });
    } catch (error) {
      throw new SignInFailed(
        "provider_unavailable",
        `The token endpoint could not be reached (${(error as Error).message}).`,
      );
    }
    const answer = (await response.json().catch(() => ({}))) as {
      id_token?: unknown;
      access_token?: unknown;
      error?: unknown;
    };
    if (!response.ok) {
      // The error code is the provider's word for what went wrong; its description may quote our request.
      const code = typeof answer.error === "string" ? answer.error.slice(0, 64) : `HTTP ${response.status}`;
      throw new SignInFailed("token_exchange_failed", `The token endpoint refused the code (${code}).`);
    }
    if (typeof answer.id_token !== "string") {
      throw new SignInFailed("token_exchange_failed", "The token endpoint answered without an ID token.");
    }
    return {
      idToken: answer.id_token,
      accessToken: typeof answer.access_token === "string" ? answer.access_token : undefined,
    };
  }

  /**
   * The claims a sign-in maps to a principal: the verified ID token's, plus the org-role
   * claim from the access token when the ID token lacks it. Some providers put roles only
   * in access tokens (WorkOS documents no role in its ID tokens); the access token counts
   * only if it is a JWT the same issuer signed, for this client or Atrium's audience, about
   * the same subject. An opaque or foreign access token adds nothing. With a WorkOS
   * organization named, no token's role counts: signin/workos-membership.ts reads the
   * membership in that organization instead (ADR 0071).
   */
  async signInClaims(tokens: TokenSet, nonce: string): Promise<JWTPayload> {
    const claims = await this.verifyIdToken(tokens.idToken, nonce);
    const roleClaim = this.auth.claims.orgRole;
    if (
      roleClaim === undefined ||
      this.auth.workosOrganization !== undefined ||
      claims[roleClaim] !== undefined ||
      tokens.accessToken === undefined
    ) {
      return claims;
    }
    const access = await this.verifyAccessToken(tokens.accessToken);
    const subject = this.auth.claims.subject;
    if (access === undefined || access[subject] !== claims[subject] || access[roleClaim] === undefined) {
      return claims;
    }
    return { ...claims, [roleClaim]: access[roleClaim] };
  }

  private clientSecret(): string {
    // load.ts sets a secret-based method only with a secret; reaching here without one is a bug.
    if (this.auth.clientSecret === undefined) {
      throw new Error(`${this.auth.clientAuthMethod} needs a client secret, and none is configured.`);
    }
    return this.auth.clientSecret;
  }

  private async verifyAccessToken(accessToken: string): Promise<JWTPayload | undefined> {
    try {
      const { payload } = await jwtVerify(accessToken, await this.keySet(), {
        issuer: this.auth.issuer,
        audience: [this.auth.clientId, this.auth.audience],
        algorithms: ACCEPTED_ALGORITHMS,
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
        requiredClaims: ["exp"],
        currentDate: new Date(this.now()),
      });
      return payload;
    } catch {
      return undefined;
    }
  }

  /**
   * Verifies an ID token against the provider's JWKS: signature with a pinned asymmetric
   * algorithm, issuer, audience (our client id), expiry, and the nonce this sign-in sent.
   */
  async verifyIdToken(idToken: string, nonce: string): Promise<JWTPayload> {
    const keys = await this.keySet();
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(idToken, keys, {
        issuer: this.auth.issuer,
        audience: this.auth.clientId,
        algorithms: ACCEPTED_ALGORITHMS,
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
        requiredClaims: ["exp", "iat"],
        currentDate: new Date(this.now()),
      }));
    } catch (error) {
      if (error instanceof ProviderKeysUnavailable)
        throw new SignInFailed("provider_unavailable", error.message);
      throw new SignInFailed("id_token_invalid", `The ID token was refused: ${(error as Error).message}`);
    }
    if (payload.nonce !== nonce) {
      throw new SignInFailed("id_token_invalid", "The ID token's nonce is not the one this sign-in sent.");
    }
    // OpenID Connect Core §3.1.3.7: a token for several audiences names its authorized party.
    const audiences = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
    if ((audiences.length > 1 || payload.azp !== undefined) && payload.azp !== this.auth.clientId) {
      throw new SignInFailed("id_token_invalid", "The ID token was issued to another party (azp).");
    }
    return payload;
  }

  /** The provider's signing keys, from discovery's `jwks_uri`. */
  async keySet(): Promise<KeySet> {
    const { jwksUri } = await this.metadata();
    // jose caches the keys and fetches them again when a token names a kid it has not seen.
    if (this.keys?.uri !== jwksUri) {
      this.keys = {
        uri: jwksUri,
        set: createRemoteJWKSet(new URL(jwksUri), {
          timeoutDuration: PROVIDER_TIMEOUT_MS,
          [customFetch]: this.fetchKeys,
        }),
      };
    }
    return this.keys.set;
  }

  /**
   * jose's fetch of the key set, shared by every caller while it runs, and remembered for
   * DISCOVERY_RETRY_MS when it fails: jose fetches again on each token while it holds no keys, so
   * a provider that is down was asked once per request (test/unit/identity/oidc-client.test.ts
   * "the key set").
   */
  private readonly fetchKeys: FetchImplementation = async (url, options) => {
    const failedAtMs = this.keysFailedAtMs;
    if (failedAtMs !== undefined && isWithin(this.now(), failedAtMs, DISCOVERY_RETRY_MS)) {
      throw new ProviderKeysUnavailable(`The key set at ${url} could not be fetched a moment ago.`);
    }
    const failed = (why: string) => {
      this.keysFailedAtMs = this.now();
      return new ProviderKeysUnavailable(`The key set at ${url} could not be fetched (${why}).`);
    };
    let response: Response;
    try {
      response = await fetch(url, options);
    } catch (error) {
      throw failed((error as Error).message);
    }
    if (response.status !== 200) {
      await response.body?.cancel();
      throw failed(`it answered ${response.status}`);
    }
    // A 200 that is no key set (a maintenance page, a proxy's or captive portal's answer) is the
    // provider unavailable too: handed to jose, it left jose with no keys, so every token fetched
    // it again and was refused as if invalid (401 "sign in again").
    const text = await response.text().catch(() => undefined);
    if (text === undefined || !isKeySet(text)) throw failed("it answered 200 with no JSON key set");
    this.keysFailedAtMs = undefined;
    return new Response(text, { status: 200, headers: response.headers });
  };
}

/** Whether `text` is a JSON object with a `keys` array, the shape of a JWK Set (RFC 7517 §5). */
function isKeySet(text: string): boolean {
  try {
    const parsed: unknown = JSON.parse(text);
    return (
      typeof parsed === "object" && parsed !== null && Array.isArray((parsed as { keys?: unknown }).keys)
    );
  } catch {
    return false;
  }
}

async function discover(issuer: string): Promise<ProviderMetadata> {
  const url = `${issuer.replace(/\/$/, "")}/.well-known/openid-configuration`;
  let response: Response;
  try {
    response = await fetch(url, { redirect: "error", signal: AbortSignal.timeout(PROVIDER_TIMEOUT_MS) });
  } catch (error) {
    throw new SignInFailed(
      "provider_unavailable",
      `OpenID discovery at ${url} failed (${(error as Error).message}).`,
    );
  }
  if (!response.ok) {
    throw new SignInFailed("provider_unavailable", `OpenID discovery at ${url} answered ${response.status}.`);
  }
  const document = (await response.json().catch(() => undefined)) as Record<string, unknown> | undefined;
  if (document?.issuer !== issuer) {
    // A document that names another issuer would let that issuer's tokens in (OpenID Discovery §4.3).
    throw new SignInFailed("discovery_invalid", `OpenID discovery at ${url} names another issuer.`);
  }
  const endpoint = (field: string): string => {
    const value = document[field];
    if (typeof value !== "string" || !/^https?:\/\//.test(value)) {
      throw new SignInFailed("discovery_invalid", `OpenID discovery at ${url} has no usable ${field}.`);
    }
    return value;
  };
  return {
    issuer,
    authorizationEndpoint: endpoint("authorization_endpoint"),
    tokenEndpoint: endpoint("token_endpoint"),
    jwksUri: endpoint("jwks_uri"),
    issParameterSupported: document.authorization_response_iss_parameter_supported === true,
  };
}

function formEncode(value: string): string {
  return new URLSearchParams({ v: value }).toString().slice(2);
}
