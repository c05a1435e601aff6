import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair } from "jose";
import Provider, { errors } from "oidc-provider";
import { closeServer, PROVIDER_TTL, testAccount } from "./oidc-issuer.ts";

/** Scopes the protected MCP server knows: `read` for its reading tool, `write` for its writing one. */
export const RESOURCE_SCOPES = ["read", "write"] as const;

/**
 * Ways the authorization server can misbehave, each a real-world mistake a client must refuse.
 * Changed live with `misbehave()`, so a flow can start honest and end wrong.
 */
export interface Misbehaviour {
  /** RFC 9207 `iss` on the authorization response: the issuer's own (default), another one, or none. */
  issInResponse?: "correct" | "wrong" | "missing";
  /** Metadata whose `issuer` is not the URL it was fetched from (a mix-up attack). */
  wrongIssuerInMetadata?: boolean;
  /** Metadata without `code_challenge_methods_supported` (so no S256): PKCE cannot be trusted. */
  omitS256?: boolean;
}

/** One token-endpoint request: its grant type, what it asked for, and how it ended. */
export interface TokenRequest {
  grantType: string;
  resource: string | undefined;
  scope: string | undefined;
  /** `ok`, or the OAuth error code the provider answered (e.g. `invalid_grant`). */
  outcome: string;
}

/** One authorization request as it reached the provider's authorization endpoint. */
export interface AuthorizationRequest {
  clientId: string | null;
  scope: string | null;
  resource: string | null;
  codeChallengeMethod: string | null;
  redirectUri: string | null;
}

/** What the resource server needs to know about an access token the provider issued. */
export interface IssuedAccessToken {
  jti: string;
  grantId: string | undefined;
}

export interface AuthorizationServerOptions {
  /** The protected resource (the MCP server's URL): the one `resource` the provider issues tokens for. */
  resource: string;
  /** Access-token lifetime in seconds (the `exp` the provider signs and the `expires_in` it answers). */
  accessTokenTtlSeconds: number;
  /** Clients registered before any request, e.g. a confidential client from configuration. */
  clients?: Array<Record<string, unknown>>;
  /** Called as each access token is issued (the resource server keys its own expiry on it). */
  onAccessToken(token: IssuedAccessToken): void;
}

export interface TestAuthorizationServer {
  /** The issuer URL, `http://127.0.0.1:<port>`; metadata at /.well-known/oauth-authorization-server. */
  issuer: string;
  misbehave(change: Misbehaviour): void;
  tokenRequests(): TokenRequest[];
  /** Token-endpoint requests so far, by grant type (failed ones included). */
  tokenRequestCounts(): Record<string, number>;
  authorizationRequests(): AuthorizationRequest[];
  /** How many clients registered themselves dynamically (RFC 7591). */
  registrations(): number;
  /** Revokes the grant a refresh token belongs to (its refresh and access tokens with it). */
  revokeRefreshToken(refreshToken: string): Promise<void>;
  /** Revokes every grant: each refresh token the provider issued now answers `invalid_grant`. */
  revokeAllGrants(): Promise<string[]>;
  close(): Promise<void>;
}

// The provider serves its metadata at the OIDC path; the alias serves the same document at the
// RFC 8414 path MCP clients ask first.
const OIDC_METADATA = "/.well-known/openid-configuration";
const OAUTH_METADATA = "/.well-known/oauth-authorization-server";
// A header the fixture puts on its own request for the honest metadata, so only the answer it
// relays to a client is rewritten.
const INTERNAL_HEADER = "x-oauth-fixture-internal";

/**
 * oidc-provider on 127.0.0.1 as an MCP server's authorization server: resource indicators with
 * `resource` the only audience, ES256 JWT access tokens, a rotating refresh token on every
 * code grant, open dynamic client registration, PKCE S256 required, RFC 9207 `iss` on the
 * authorization response, and the development login and consent pages (any login, any
 * password; consent grants what was asked).
 */
export async function startAuthorizationServer(
  options: AuthorizationServerOptions,
): Promise<TestAuthorizationServer> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { privateKey } = await generateKeyPair("ES256", { extractable: true });
  const provider = new Provider(issuer, {
    clients: options.clients ?? [],
    clientDefaults: { id_token_signed_response_alg: "ES256" },
    jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: "oauth-fixture", alg: "ES256", use: "sig" }] },
    scopes: ["openid", "offline_access"],
    claims: { openid: ["sub"] },
    ttl: { ...PROVIDER_TTL, AccessToken: options.accessTokenTtlSeconds, RefreshToken: 86_400 },
    findAccount: (_ctx: unknown, login: string) => ({
      accountId: login,
      claims: () => ({ sub: testAccount(login).sub }),
    }),
    pkce: { required: () => true },
    // MCP clients do not ask for offline_access: every client allowed the refresh_token grant
    // gets one, and every refresh rotates it (so a reused one revokes the family).
    issueRefreshToken: async (_ctx: unknown, client: { grantTypeAllowed(type: string): boolean }) =>
      client.grantTypeAllowed("refresh_token"),
    rotateRefreshToken: true,
    features: {
      devInteractions: { enabled: true },
      registration: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        // No default: a client that does not name the resource gets no token for it.
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, resource: string) => {
          if (resource !== options.resource) throw new errors.InvalidTarget();
          return {
            scope: RESOURCE_SCOPES.join(" "),
            audience: options.resource,
            accessTokenTTL: options.accessTokenTtlSeconds,
            accessTokenFormat: "jwt",
            jwt: { sign: { alg: "ES256" } },
          };
        },
      },
    },
  });

  let behaviour: Required<Misbehaviour> = {
    issInResponse: "correct",
    wrongIssuerInMetadata: false,
    omitS256: false,
  };
  const tokens: TokenRequest[] = [];
  const authorizations: AuthorizationRequest[] = [];
  const grants = new Set<string>();
  let registered = 0;

  type Ctx = { oidc?: { params?: Record<string, unknown> } };
  const tokenRequest = (ctx: Ctx, outcome: string): TokenRequest => {
    const params = ctx.oidc?.params ?? {};
    const text = (name: string) => (typeof params[name] === "string" ? (params[name] as string) : undefined);
    return {
      grantType: text("grant_type") ?? "(none)",
      resource: text("resource"),
      scope: text("scope"),
      outcome,
    };
  };
  provider.on("grant.success", (ctx: Ctx) => tokens.push(tokenRequest(ctx, "ok")));
  provider.on("grant.error", (ctx: Ctx, error: { error?: string }) =>
    tokens.push(tokenRequest(ctx, error.error ?? "server_error")),
  );
  provider.on("grant.saved", (grant: { jti: string }) => grants.add(grant.jti));
  provider.on("registration_create.success", () => registered++);
  provider.on("access_token.issued", (token: { jti: string; grantId?: string }) =>
    options.onAccessToken({ jti: token.jti, grantId: token.grantId }),
  );

  async function revokeGrant(grantId: string): Promise<void> {
    await Promise.all([
      provider.AccessToken.revokeByGrantId(grantId),
      provider.RefreshToken.revokeByGrantId(grantId),
      provider.AuthorizationCode.revokeByGrantId(grantId),
      provider.Grant.adapter.destroy(grantId),
    ]);
    grants.delete(grantId);
  }

  const callback = provider.callback();
  server.on("request", (request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? "/", issuer);
    const internal = request.headers[INTERNAL_HEADER] === "1";
    if (!internal && request.method === "GET" && [OIDC_METADATA, OAUTH_METADATA].includes(url.pathname)) {
      void relayMetadata(response);
      return;
    }
    if (url.pathname === "/auth" && request.method === "GET") {
      const q = url.searchParams;
      authorizations.push({
        clientId: q.get("client_id"),
        scope: q.get("scope"),
        resource: q.get("resource"),
        codeChallengeMethod: q.get("code_challenge_method"),
        redirectUri: q.get("redirect_uri"),
      });
    }
    rewriteIssOnRedirect(response);
    callback(request, response);
  });

  // The metadata the provider publishes, changed as `behaviour` says.
  async function relayMetadata(response: ServerResponse): Promise<void> {
    const honest = await fetch(`${issuer}${OIDC_METADATA}`, { headers: { [INTERNAL_HEADER]: "1" } });
    const metadata = (await honest.json()) as Record<string, unknown>;
    if (behaviour.wrongIssuerInMetadata) metadata.issuer = `${issuer}/another-issuer`;
    if (behaviour.omitS256) delete metadata.code_challenge_methods_supported;
    response.writeHead(200, { "content-type": "application/json" });
    response.end(JSON.stringify(metadata));
  }

  // The authorization response is a redirect whose query carries `iss`; a misbehaving server
  // names another issuer there, or leaves it out.
  function rewriteIssOnRedirect(response: ServerResponse): void {
    const setHeader = response.setHeader.bind(response);
    response.setHeader = (name: string, value: number | string | readonly string[]) => {
      if (
        name.toLowerCase() !== "location" ||
        typeof value !== "string" ||
        behaviour.issInResponse === "correct"
      ) {
        return setHeader(name, value);
      }
      const location = new URL(value, issuer);
      if (!location.searchParams.has("iss")) return setHeader(name, value);
      if (behaviour.issInResponse === "missing") location.searchParams.delete("iss");
      else location.searchParams.set("iss", `${issuer}/another-issuer`);
      return setHeader(name, location.href);
    };
  }

  return {
    issuer,
    misbehave(change) {
      behaviour = { ...behaviour, ...change };
    },
    tokenRequests: () => [...tokens],
    tokenRequestCounts() {
      const counts: Record<string, number> = {};
      for (const { grantType } of tokens) counts[grantType] = (counts[grantType] ?? 0) + 1;
      return counts;
    },
    authorizationRequests: () => [...authorizations],
    registrations: () => registered,
    async revokeRefreshToken(refreshToken) {
      const found = await provider.RefreshToken.find(refreshToken, { ignoreExpiration: true });
      if (!found?.grantId) throw new Error("the authorization server issued no such refresh token");
      await revokeGrant(found.grantId);
    },
    async revokeAllGrants() {
      const revoked = [...grants];
      await Promise.all(revoked.map(revokeGrant));
      return revoked;
    },
    close: () => closeServer(server),
  };
}
