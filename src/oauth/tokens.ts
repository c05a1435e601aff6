import { compactVerify, decodeJwt, type JWTPayload, type JWTVerifyGetKey, jwtVerify, SignJWT } from "jose";
import { randomSecret } from "../crypto/secrets.ts";
import { CLOCK_TOLERANCE_SECONDS, type Clock, systemClock } from "../kernel/clock.ts";
import type { AccessTokenLifetime } from "./grant-record.ts";
import type { Grants } from "./grants.ts";
import { SIGNING_ALG, type SigningKeys } from "./keys.ts";
import { OAuthError } from "./oauth-error.ts";

/** RFC 9068: the media type of a JWT access token, in its `typ` header. */
export const ACCESS_TOKEN_TYP = "at+jwt";
const REFUSED = "The access token is invalid, expired or not for this resource.";
const REQUIRED_CLAIMS = ["iss", "aud", "sub", "exp", "iat", "jti", "client_id", "scope", "gid"];
/** How many verified tokens are remembered; an MCP client sends the same token many times. */
const VERIFIED_CACHE_SIZE = 10_000;

export interface AccessTokenClaims {
  sub: string;
  clientId: string;
  scopes: string[];
  jti: string;
  grantId: string;
  audience: string;
  /** Epoch seconds, as in `exp`. */
  expiresAt: number;
}

export interface IssueAccessToken {
  sub: string;
  clientId: string;
  scopes: string[];
  audience: string;
  grantId: string;
  /** From the grant, which recorded its `exp` before the token is issued (Grants.load keeps it till then). */
  lifetime: AccessTokenLifetime;
}

export interface AccessTokensOptions {
  keys: SigningKeys;
  grants: Pick<Grants, "admitsTokensOf">;
  publicUrl: () => string;
  clock?: Clock;
}

/**
 * Atrium's access tokens: ES256 JWTs (RFC 9068) for exactly one workspace MCP URL, checked
 * locally against the instance's own keys with no call out. Each names its grant (`gid`),
 * so revoking the grant cuts the token before it expires.
 */
export class AccessTokens {
  private readonly clock: Clock;
  // A signature check costs ~150–200 µs (bench: atrium-oauth); a token whose signature was
  // checked once is only rechecked for audience, expiry and revocation. Only tokens that
  // verified are kept, so garbage cannot fill it.
  private readonly verified = new Map<string, AccessTokenClaims>();

  constructor(private readonly options: AccessTokensOptions) {
    this.clock = options.clock ?? systemClock;
  }

  async issue(input: IssueAccessToken): Promise<{ token: string; expiresIn: number }> {
    const key = this.options.keys.current();
    const { issuedAt, expiresAt } = input.lifetime;
    const token = await new SignJWT({
      client_id: input.clientId,
      scope: input.scopes.join(" "),
      gid: input.grantId,
    })
      .setProtectedHeader({ alg: SIGNING_ALG, typ: ACCESS_TOKEN_TYP, kid: key.kid })
      .setIssuer(this.options.publicUrl())
      .setAudience(input.audience)
      .setSubject(input.sub)
      .setJti(randomSecret(16))
      .setIssuedAt(issuedAt)
      .setExpirationTime(expiresAt)
      .sign(key.privateKey);
    return { token, expiresIn: expiresAt - issuedAt };
  }

  /**
   * The claims of a token this instance issued for exactly `audience`, unexpired and not
   * revoked. Every refusal is the same invalid_token OAuthError: the reason stays here, so a forger
   * learns nothing from trying.
   */
  async verify(token: string, audience: string): Promise<AccessTokenClaims> {
    const known = this.verified.get(token);
    if (known) {
      const expired = (known.expiresAt + CLOCK_TOLERANCE_SECONDS) * 1000 <= this.clock();
      if (expired) this.verified.delete(token);
      if (expired || known.audience !== audience || !this.options.grants.admitsTokensOf(known.grantId)) {
        throw new OAuthError("invalid_token", REFUSED);
      }
      return known;
    }
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.keyFor, {
        algorithms: [SIGNING_ALG],
        issuer: this.options.publicUrl(),
        audience,
        typ: ACCESS_TOKEN_TYP,
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
        currentDate: new Date(this.clock()),
        requiredClaims: REQUIRED_CLAIMS,
      }));
    } catch {
      throw new OAuthError("invalid_token", REFUSED);
    }
    const claims = claimsOf(payload);
    if (!claims || claims.audience !== audience || !this.options.grants.admitsTokensOf(claims.grantId)) {
      throw new OAuthError("invalid_token", REFUSED);
    }
    this.remember(token, claims);
    return claims;
  }

  private remember(token: string, claims: AccessTokenClaims): void {
    if (this.verified.size >= VERIFIED_CACHE_SIZE) {
      // Maps iterate in insertion order: the oldest entry goes first.
      const oldest = this.verified.keys().next().value;
      if (oldest !== undefined) this.verified.delete(oldest);
    }
    this.verified.set(token, claims);
  }

  /**
   * For revocation (RFC 7009): the claims of a token this instance signed, whatever its
   * audience and even if expired; `undefined` for anything else.
   */
  async inspect(token: string): Promise<AccessTokenClaims | undefined> {
    try {
      const { payload, protectedHeader } = await compactVerify(token, this.keyFor, {
        algorithms: [SIGNING_ALG],
      });
      if (protectedHeader.typ !== ACCESS_TOKEN_TYP) return undefined;
      const claims = JSON.parse(new TextDecoder().decode(payload)) as JWTPayload;
      return claims.iss === this.options.publicUrl() ? claimsOf(claims) : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Whether a bearer token claims to come from this instance (read, not verified), so the
   * caller can send it to `verify` rather than to the identity provider. Cheap: no crypto.
   */
  isAtriumToken(token: string): boolean {
    // A token verify() has accepted was checked to be this issuer's: no need to decode it again.
    if (this.verified.has(token)) return true;
    try {
      return decodeJwt(token).iss === this.options.publicUrl();
    } catch {
      return false;
    }
  }

  private readonly keyFor: JWTVerifyGetKey = (header) => {
    const key = header.kid === undefined ? undefined : this.options.keys.find(header.kid);
    if (!key) throw new OAuthError("invalid_token", REFUSED);
    return key.publicKey;
  };
}

function claimsOf(payload: JWTPayload): AccessTokenClaims | undefined {
  const { sub, jti, aud, exp } = payload;
  const clientId = payload.client_id;
  const scope = payload.scope;
  const grantId = payload.gid;
  if (
    typeof sub !== "string" ||
    typeof jti !== "string" ||
    typeof aud !== "string" ||
    typeof exp !== "number" ||
    typeof clientId !== "string" ||
    typeof scope !== "string" ||
    typeof grantId !== "string"
  ) {
    return undefined;
  }
  return {
    sub,
    clientId,
    scopes: scope.split(" ").filter((s) => s !== ""),
    jti,
    grantId,
    audience: aud,
    expiresAt: exp,
  };
}
