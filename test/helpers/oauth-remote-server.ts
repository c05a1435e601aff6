import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { type AuthInfo, createMcpHandler, McpServer } from "@modelcontextprotocol/server";
import { createRemoteJWKSet, jwtVerify } from "jose";
import * as z from "zod";
import {
  type AuthorizationRequest,
  type Misbehaviour,
  RESOURCE_SCOPES,
  startAuthorizationServer,
  type TokenRequest,
} from "./oauth-authorization-server.ts";

export type { AuthorizationRequest, Misbehaviour, TokenRequest };
export { RESOURCE_SCOPES };

/** The tools the server serves, and the scope each needs. */
export const OAUTH_TOOL_SCOPES = { whoami: "read", write_note: "write" } as const;

export interface OAuthRemoteServerOptions {
  /** Access-token lifetime, seconds (default 300): `expires_in`, the JWT's `exp`, and the server's own cut-off. */
  accessTokenTtlSeconds?: number;
  /**
   * The clock (ms) the resource server judges a token's age by: a token is refused once
   * `clock()` reaches the moment it was issued (on this clock) plus its lifetime. Pass a
   * FakeTime's clock so advancing it expires tokens without waiting (default Date.now).
   */
  clock?: () => number;
  /** The `scope` a 401 asks for (what a client should request first; default `read`). */
  challengeScope?: string;
  /** Clients registered at the authorization server from the start (a pre-registered client). */
  clients?: Array<Record<string, unknown>>;
  misbehave?: Misbehaviour;
}

/** A `tools/call` that passed the bearer check. */
export interface AuthorizedCall {
  tool: string;
  sub: string;
  clientId: string;
  scopes: string[];
}

export interface OAuthRemoteServer {
  /** The MCP endpoint and the protected resource's identifier, `http://127.0.0.1:<port>/mcp`. */
  url: string;
  /** RFC 9728 metadata, `/.well-known/oauth-protected-resource/mcp` (named in every 401). */
  resourceMetadataUrl: string;
  /** The authorization server's issuer (its own port). */
  issuer: string;
  /** Makes the authorization server misbehave from now on (merged with what was set before). */
  misbehave(change: Misbehaviour): void;
  /** Token-endpoint requests so far by grant type, e.g. `{ authorization_code: 1, refresh_token: 1 }`. */
  tokenRequestCounts(): Record<string, number>;
  tokenRequests(): TokenRequest[];
  authorizationRequests(): AuthorizationRequest[];
  /** How many clients registered dynamically. */
  registrations(): number;
  /** Revokes the grant of one refresh token at the authorization server. */
  revokeRefreshToken(refreshToken: string): Promise<void>;
  /** Revokes every grant: every refresh then answers `invalid_grant`. Access tokens stay valid until they expire. */
  revokeAllGrants(): Promise<void>;
  /** The resource server refuses every access token issued so far (401 invalid_token), as if all expired. */
  expireAccessTokens(): void;
  /** Every tool call that got past the bearer and scope checks. */
  calls(): AuthorizedCall[];
  close(): Promise<void>;
}

const DEFAULT_TTL_SECONDS = 300;

/**
 * A real OAuth-protected MCP server on 127.0.0.1: an SDK server (streamable HTTP, both eras)
 * whose every request needs a bearer JWT from its own oidc-provider authorization server
 * (test/helpers/oauth-authorization-server.ts), verified with jose against the provider's
 * JWKS with `aud` = its URL. `whoami` needs scope `read`; `write_note` needs `write` and is
 * answered 403 `insufficient_scope` without it.
 */
export async function startOAuthRemoteServer(
  options: OAuthRemoteServerOptions = {},
): Promise<OAuthRemoteServer> {
  const ttlMs = (options.accessTokenTtlSeconds ?? DEFAULT_TTL_SECONDS) * 1000;
  const clock = options.clock ?? Date.now;
  const challengeScope = options.challengeScope ?? "read";
  // jti → when (on `clock`) the token stops being accepted. A token not here was not issued
  // by this fixture's provider, or was expired by hand.
  const expiresAt = new Map<string, number>();
  const calls: AuthorizedCall[] = [];

  // `route` is defined below; the server takes no request before this function returns.
  const http = serve({ fetch: (request) => route(request), port: 0, hostname: "127.0.0.1" });
  await new Promise<void>((resolve) => http.once("listening", () => resolve()));
  const port = (http.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}/mcp`;
  const resourceMetadataUrl = `http://127.0.0.1:${port}/.well-known/oauth-protected-resource/mcp`;

  const as = await startAuthorizationServer({
    resource: url,
    accessTokenTtlSeconds: ttlMs / 1000,
    clients: options.clients,
    onAccessToken: ({ jti }) => expiresAt.set(jti, clock() + ttlMs),
  });
  if (options.misbehave) as.misbehave(options.misbehave);
  const jwks = createRemoteJWKSet(new URL(`${as.issuer}/jwks`));

  function challenge(status: 401 | 403, fields: Record<string, string>): Response {
    const params = Object.entries({ resource_metadata: resourceMetadataUrl, ...fields })
      .map(([name, value]) => `${name}="${value}"`)
      .join(", ");
    return new Response(JSON.stringify({ error: fields.error ?? "unauthorized" }), {
      status,
      headers: { "content-type": "application/json", "www-authenticate": `Bearer ${params}` },
    });
  }

  async function authenticate(request: Request): Promise<AuthInfo | Response> {
    const header = request.headers.get("authorization");
    if (header === null || !/^Bearer /i.test(header)) return challenge(401, { scope: challengeScope });
    const token = header.slice("Bearer ".length).trim();
    try {
      const { payload } = await jwtVerify(token, jwks, {
        issuer: as.issuer,
        audience: url,
        typ: "at+jwt",
        algorithms: ["ES256"],
      });
      const until = typeof payload.jti === "string" ? expiresAt.get(payload.jti) : undefined;
      if (until === undefined || clock() >= until) throw new Error("expired");
      return {
        token,
        clientId: String(payload.client_id),
        scopes: typeof payload.scope === "string" ? payload.scope.split(" ") : [],
        expiresAt: payload.exp,
        resource: new URL(url),
        extra: { sub: payload.sub },
      };
    } catch {
      return challenge(401, {
        error: "invalid_token",
        error_description: "the access token is invalid or expired",
      });
    }
  }

  const handler = createMcpHandler(({ authInfo }) => buildServer(authInfo));

  function buildServer(authInfo: AuthInfo | undefined): McpServer {
    const server = new McpServer({ name: "oauth-remote-server-fixture", version: "1.0.0" });
    const who = {
      sub: String(authInfo?.extra?.sub),
      clientId: authInfo?.clientId ?? "",
      scopes: authInfo?.scopes ?? [],
    };
    server.registerTool(
      "whoami",
      {
        description: "Who the access token speaks for, and its scopes (needs scope read).",
        outputSchema: { sub: z.string(), clientId: z.string(), scopes: z.array(z.string()) },
      },
      async () => {
        calls.push({ tool: "whoami", ...who });
        return { content: [{ type: "text", text: JSON.stringify(who) }], structuredContent: who };
      },
    );
    server.registerTool(
      "write_note",
      { description: "Pretend to write a note (needs scope write).", inputSchema: { text: z.string() } },
      async ({ text }) => {
        calls.push({ tool: "write_note", ...who });
        return { content: [{ type: "text", text: `wrote ${text.length} characters` }] };
      },
    );
    return server;
  }

  async function serveMcp(request: Request): Promise<Response> {
    const auth = await authenticate(request);
    if (auth instanceof Response) return auth;
    if (request.method !== "POST") return handler.fetch(request, { authInfo: auth });
    const text = await request.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    // The scope a called tool needs is checked before the SDK sees the call, because only the
    // HTTP layer can answer 403 with a challenge (RFC 6750 §3.1).
    const messages = Array.isArray(parsed) ? parsed : [parsed];
    for (const message of messages) {
      const needed = requiredScope(message);
      if (needed !== undefined && !auth.scopes.includes(needed)) {
        const scope = [...new Set([...auth.scopes.filter((s) => isResourceScope(s)), needed])];
        return challenge(403, {
          error: "insufficient_scope",
          scope: RESOURCE_SCOPES.filter((s) => scope.includes(s)).join(" "),
          error_description: `this tool needs scope ${needed}`,
        });
      }
    }
    const replay = new Request(request.url, { method: "POST", headers: request.headers, body: text });
    return handler.fetch(replay, { authInfo: auth, ...(parsed === undefined ? {} : { parsedBody: parsed }) });
  }

  function route(request: Request): Promise<Response> | Response {
    const { pathname } = new URL(request.url);
    if (pathname === "/mcp") return serveMcp(request);
    if (pathname === "/.well-known/oauth-protected-resource/mcp" && request.method === "GET") {
      return Response.json({
        resource: url,
        authorization_servers: [as.issuer],
        scopes_supported: [...RESOURCE_SCOPES],
        bearer_methods_supported: ["header"],
      });
    }
    return Response.json({ error: `no route ${request.method} ${pathname}` }, { status: 404 });
  }

  return {
    url,
    resourceMetadataUrl,
    issuer: as.issuer,
    misbehave: (change) => as.misbehave(change),
    tokenRequestCounts: () => as.tokenRequestCounts(),
    tokenRequests: () => as.tokenRequests(),
    authorizationRequests: () => as.authorizationRequests(),
    registrations: () => as.registrations(),
    revokeRefreshToken: (refreshToken) => as.revokeRefreshToken(refreshToken),
    async revokeAllGrants() {
      await as.revokeAllGrants();
    },
    expireAccessTokens: () => expiresAt.clear(),
    calls: () => [...calls],
    async close() {
      await as.close();
      await new Promise<void>((resolve) => {
        (http as Server).closeAllConnections();
        http.close(() => resolve());
      });
    },
  };
}

function isResourceScope(scope: string): scope is (typeof RESOURCE_SCOPES)[number] {
  return (RESOURCE_SCOPES as readonly string[]).includes(scope);
}

/** The scope a JSON-RPC message needs beyond a valid token: a `tools/call`'s tool's scope. */
function requiredScope(message: unknown): string | undefined {
  if (typeof message !== "object" || message === null) return undefined;
  const { method, params } = message as { method?: unknown; params?: { name?: unknown } };
  if (method !== "tools/call" || typeof params?.name !== "string") return undefined;
  return (OAUTH_TOOL_SCOPES as Record<string, string>)[params.name];
}
