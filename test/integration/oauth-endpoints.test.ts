import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serve } from "@hono/node-server";
import {
  OAuthMetadataSchema,
  OAuthProtectedResourceMetadataSchema,
  OAuthTokensSchema,
} from "@modelcontextprotocol/core";
import { Hono } from "hono";
import { createLocalJWKSet, jwtVerify } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { s256 } from "../../src/crypto/pkce.ts";
import { errorBody, errorHandler } from "../../src/http/error-response.ts";
import { derivePrincipalId } from "../../src/identity/principal.ts";
import { UserDirectory } from "../../src/identity/users.ts";
import { createLogger } from "../../src/log.ts";
import {
  type AuthorizationServer,
  createAuthorizationServer,
  isOAuthPublicPath,
} from "../../src/oauth/server.ts";
import { StorageLayout } from "../../src/storage/paths.ts";
import type { AppEnv } from "../../src/web/app-env.ts";
import { workspaceMcpUrl } from "../../src/web/urls.ts";

const log = createLogger("silent");
const WS = "ws_0123456789abcdef";
const OTHER_WS = "ws_fedcba9876543210";
const VERIFIER = "a-verifier-that-is-long-enough-to-satisfy-rfc-7636-43";
const REDIRECT = "http://127.0.0.1/callback";
const ALICE = derivePrincipalId("test", "alice");
const EPOCH = new Date(0).toISOString();

interface RunningOAuth {
  url: string;
  oauth: AuthorizationServer;
  close(): Promise<void>;
}

/** The authorization server's routes in a hono app on 127.0.0.1:0, as the real app mounts them. */
async function startOAuth(
  allowPrivateClientMetadata: boolean,
  registrationsPerHour = 100,
  clientMetadataFetchesPerHour = 100,
  maxUnusedClients = 10_000,
): Promise<RunningOAuth> {
  const root = await mkdtemp(join(tmpdir(), "atrium-oauth-it-"));
  const layout = new StorageLayout(root);
  const users = new UserDirectory(layout);
  let url = "";
  const oauth = await createAuthorizationServer({
    layout,
    config: {
      accessTokenTtlSeconds: 900,
      refreshTokenTtlSeconds: 86_400,
      refreshReuseGraceSeconds: 30,
      allowPrivateClientMetadata,
      registrationsPerHour,
      clientMetadataFetchesPerHour,
      parkedRequestsPerHour: 30,
      maxUnusedClients,
    },
    publicUrl: () => url,
    users,
    // Alice, whose codes these tests issue, has been an admin of every workspace since 1970.
    workspaces: {
      memberOf: (_id, principalId) =>
        principalId === ALICE ? { principalId, role: "admin", addedAt: EPOCH } : undefined,
    },
    log,
  });
  const app = new Hono<AppEnv>();
  app.onError(errorHandler(log));
  app.notFound((c) => c.json(errorBody("not_found", `No route for ${c.req.method} ${c.req.path}.`), 404));
  // Stands in for the app's /v1 authentication: `x-test-user: <name>`, org admins start with "orgadmin".
  app.use("/v1/*", async (c, next) => {
    const name = c.req.header("x-test-user") ?? "";
    c.set("principal", {
      id: derivePrincipalId("test", name),
      displayName: name,
      email: null,
      orgRole: name.startsWith("orgadmin") ? "admin" : "member",
    });
    await next();
  });
  app.route("/", oauth.routes());
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, () => resolve(s));
  });
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    oauth,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      });
      await rm(root, { recursive: true, force: true });
    },
  };
}

let as: RunningOAuth;
let resource: string;

beforeAll(async () => {
  as = await startOAuth(false);
  resource = workspaceMcpUrl(as.url, WS);
});

afterAll(() => as?.close());

function post(
  path: string,
  form: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${as.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(form).toString(),
  });
}

function registerJson(body: unknown, on: RunningOAuth = as): Promise<Response> {
  return fetch(`${on.url}/oauth/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

async function register(
  metadata: Record<string, unknown> = {},
): Promise<{ client_id: string; client_secret?: string }> {
  const response = await registerJson({ redirect_uris: [REDIRECT], client_name: "Test client", ...metadata });
  expect(response.status).toBe(201);
  return (await response.json()) as { client_id: string; client_secret?: string };
}

function issueCode(
  clientId: string,
  on: RunningOAuth = as,
  scopes = ["mcp:read", "mcp:write"],
  redirectUriOmitted = false,
): Promise<string> {
  return on.oauth.codes.issue({
    clientId,
    redirectUri: REDIRECT,
    ...(redirectUriOmitted ? { redirectUriOmitted } : {}),
    codeChallenge: s256(VERIFIER),
    scopes,
    resource: workspaceMcpUrl(on.url, WS),
    principalId: ALICE,
  });
}

function exchange(clientId: string, code: string, extra: Record<string, string> = {}): Promise<Response> {
  return post("/oauth/token", {
    grant_type: "authorization_code",
    client_id: clientId,
    code,
    redirect_uri: REDIRECT,
    code_verifier: VERIFIER,
    resource,
    ...extra,
  });
}

function refresh(
  clientId: string,
  refreshToken: string,
  extra: Record<string, string> = {},
): Promise<Response> {
  return post("/oauth/token", {
    grant_type: "refresh_token",
    client_id: clientId,
    refresh_token: refreshToken,
    ...extra,
  });
}

async function errorOf(response: Response): Promise<{ status: number; error: string; description: string }> {
  const body = (await response.json()) as { error: string; error_description: string };
  return { status: response.status, error: body.error, description: body.error_description };
}

interface Tokens {
  access_token: string;
  token_type: string;
  expires_in: number;
  scope: string;
  refresh_token?: string;
}

async function tokensOf(response: Response): Promise<Tokens> {
  expect(response.status).toBe(200);
  return (await response.json()) as Tokens;
}

describe("discovery", () => {
  it("serves RFC 8414 metadata whose issuer is the public URL, parseable by the SDK", async () => {
    const response = await fetch(`${as.url}/.well-known/oauth-authorization-server`);
    expect(response.status).toBe(200);
    const metadata = OAuthMetadataSchema.parse(await response.json());
    expect(metadata.issuer).toBe(as.url);
    expect(metadata.token_endpoint).toBe(`${as.url}/oauth/token`);
    expect(metadata.registration_endpoint).toBe(`${as.url}/oauth/register`);
    expect(metadata.revocation_endpoint).toBe(`${as.url}/oauth/revoke`);
    expect(metadata.code_challenge_methods_supported).toEqual(["S256"]);
    expect(metadata.client_id_metadata_document_supported).toBe(true);
    expect(metadata.authorization_response_iss_parameter_supported).toBe(true);
  });

  it("serves the same protected-resource metadata for any well-formed workspace id, and 404 for others", async () => {
    const response = await fetch(`${as.url}/.well-known/oauth-protected-resource/mcp/${WS}`);
    expect(response.status).toBe(200);
    const metadata = OAuthProtectedResourceMetadataSchema.parse(await response.json());
    expect(metadata).toMatchObject({
      resource,
      authorization_servers: [as.url],
      scopes_supported: ["mcp:read", "mcp:write"],
      bearer_methods_supported: ["header"],
    });
    const other = await (
      await fetch(`${as.url}/.well-known/oauth-protected-resource/mcp/${OTHER_WS}`)
    ).text();
    expect(other).toBe(JSON.stringify(metadata).replaceAll(WS, OTHER_WS));
    const bad = await fetch(`${as.url}/.well-known/oauth-protected-resource/mcp/not-a-workspace`);
    expect(bad.status).toBe(404);
    // The OAuth error shape these endpoints document, not the REST envelope.
    expect(await bad.json()).toEqual({ error: "not_found", error_description: expect.any(String) });
  });

  it("publishes public signing keys that verify the tokens it issues", async () => {
    const client = await register();
    const tokens = await tokensOf(await exchange(client.client_id, await issueCode(client.client_id)));
    const jwks = (await (await fetch(`${as.url}/oauth/jwks`)).json()) as { keys: Record<string, unknown>[] };
    expect(jwks.keys.length).toBe(1);
    expect(jwks.keys[0]).not.toHaveProperty("d");
    const { payload } = await jwtVerify(tokens.access_token, createLocalJWKSet(jwks as never), {
      issuer: as.url,
      audience: resource,
    });
    expect(payload.sub).toBe(ALICE);
  });

  it("answers CORS for any origin on the public endpoints, without credentials", async () => {
    const simple = await fetch(`${as.url}/.well-known/oauth-authorization-server`, {
      headers: { origin: "https://client.example" },
    });
    expect(simple.headers.get("access-control-allow-origin")).toBe("*");
    const preflight = await fetch(`${as.url}/oauth/token`, {
      method: "OPTIONS",
      headers: {
        origin: "https://client.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type, mcp-protocol-version",
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("*");
    expect(preflight.headers.get("access-control-allow-headers")).toMatch(/MCP-Protocol-Version/);
    expect(preflight.headers.get("access-control-allow-credentials")).toBeNull();
    const error = await post("/oauth/token", {}, { origin: "https://client.example" });
    expect(error.headers.get("access-control-allow-origin")).toBe("*");
  });

  it("names exactly the public endpoints as exempt from the Origin check", () => {
    expect(isOAuthPublicPath("/oauth/token")).toBe(true);
    expect(isOAuthPublicPath("/oauth/register")).toBe(true);
    expect(isOAuthPublicPath("/oauth/revoke")).toBe(true);
    expect(isOAuthPublicPath("/oauth/jwks")).toBe(true);
    expect(isOAuthPublicPath("/.well-known/oauth-authorization-server")).toBe(true);
    expect(isOAuthPublicPath(`/.well-known/oauth-protected-resource/mcp/${WS}`)).toBe(true);
    expect(isOAuthPublicPath("/oauth/authorize")).toBe(false);
    expect(isOAuthPublicPath("/v1/oauth/signing-keys/rotate")).toBe(false);
    expect(isOAuthPublicPath(`/mcp/${WS}`)).toBe(false);
  });
});

describe("dynamic client registration", () => {
  it("counts only a registration whose body is JSON against the hourly limit", async () => {
    const limited = await startOAuth(false, 2);
    try {
      const garbage = () =>
        fetch(`${limited.url}/oauth/register`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: "not json",
        });
      // Before, each made (and spent) the address's window: the second was already a 429.
      for (let i = 0; i < 3; i++) expect((await garbage()).status).toBe(400);
      const body = { redirect_uris: [REDIRECT] };
      expect((await registerJson(body, limited)).status).toBe(201);
      expect((await registerJson(body, limited)).status).toBe(201);
      expect((await registerJson(body, limited)).status).toBe(429);
    } finally {
      await limited.close();
    }
  });

  it("refuses registrations past the hourly limit for one address with 429 and Retry-After", async () => {
    const limited = await startOAuth(false, 2);
    try {
      const body = { redirect_uris: [REDIRECT] };
      expect((await registerJson(body, limited)).status).toBe(201);
      expect((await registerJson(body, limited)).status).toBe(201);
      const refused = await registerJson(body, limited);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(((await refused.json()) as { error: string }).error).toBe("too_many_requests");
    } finally {
      await limited.close();
    }
  });

  it("refuses registration past oauth.maxUnusedClients with 503, Retry-After and an RFC 7591 error body; a client with a grant neither counts nor goes", async () => {
    const capped = await startOAuth(false, 100, 100, 2);
    try {
      const body = { redirect_uris: [REDIRECT] };
      const used = (await (await registerJson(body, capped)).json()) as { client_id: string };
      const code = await issueCode(used.client_id, capped);
      const tokens = await tokensOf(
        await fetch(`${capped.url}/oauth/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({
            grant_type: "authorization_code",
            client_id: used.client_id,
            code,
            redirect_uri: REDIRECT,
            code_verifier: VERIFIER,
          }).toString(),
        }),
      );
      // The used client holds a live grant, so two more fit before the cap is reached.
      expect((await registerJson(body, capped)).status).toBe(201);
      expect((await registerJson(body, capped)).status).toBe(201);
      const refused = await registerJson(body, capped);
      expect(refused.status).toBe(503);
      expect(refused.headers.get("retry-after")).toBe("3600");
      expect(refused.headers.get("cache-control")).toBe("no-store");
      const error = (await refused.json()) as Record<string, unknown>;
      expect(Object.keys(error).sort()).toEqual(["error", "error_description"]);
      expect(error.error).toBe("temporarily_unavailable");
      expect(error.error_description).toMatch(/try again later/);
      const refreshed = await fetch(`${capped.url}/oauth/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "refresh_token",
          client_id: used.client_id,
          refresh_token: tokens.refresh_token as string,
        }).toString(),
      });
      await tokensOf(refreshed);
    } finally {
      await capped.close();
    }
  });

  it("registers a public client (201) with no secret", async () => {
    const response = await registerJson({ redirect_uris: [REDIRECT, "https://app.example/cb"] });
    expect(response.status).toBe(201);
    expect(response.headers.get("cache-control")).toBe("no-store");
    const client = (await response.json()) as Record<string, unknown>;
    expect(client.client_id).toMatch(/^atc_[0-9a-f]{32}$/);
    expect(client.token_endpoint_auth_method).toBe("none");
    expect(client).not.toHaveProperty("client_secret");
  });

  it("gives a confidential client a secret", async () => {
    const client = await register({ token_endpoint_auth_method: "client_secret_basic" });
    expect(client.client_secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it.each([
    ["no redirect_uris", { client_name: "x" }, "invalid_client_metadata"],
    [
      "an http redirect URI off loopback",
      { redirect_uris: ["http://app.example/cb"] },
      "invalid_redirect_uri",
    ],
    [
      "an unknown grant type",
      { redirect_uris: [REDIRECT], grant_types: ["authorization_code", "password"] },
      "invalid_client_metadata",
    ],
    [
      "a client_name with a bidi control",
      { redirect_uris: [REDIRECT], client_name: "Atrium Docs\u202E" },
      "invalid_client_metadata",
    ],
    [
      "a client_name longer than 100 characters",
      { redirect_uris: [REDIRECT], client_name: "x".repeat(101) },
      "invalid_client_metadata",
    ],
  ])("refuses %s with 400", async (_, body, code) => {
    const { status, error, description } = await errorOf(await registerJson(body));
    expect(status).toBe(400);
    expect(error).toBe(code);
    expect(description.length).toBeGreaterThan(0);
  });

  it("answers malformed bodies with an OAuth error, never a crash", async () => {
    const text = await fetch(`${as.url}/oauth/register`, { method: "POST", body: "redirect_uris=x" });
    expect(await errorOf(text)).toMatchObject({ status: 400, error: "invalid_request" });
    const broken = await fetch(`${as.url}/oauth/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{not json",
    });
    expect(await errorOf(broken)).toMatchObject({ status: 400, error: "invalid_request" });
    const deep = await fetch(`${as.url}/oauth/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: `{"redirect_uris": ${"[".repeat(5000)}${"]".repeat(5000)}}`,
    });
    expect(await errorOf(deep)).toMatchObject({
      status: 400,
      error: "invalid_request",
      description: expect.stringMatching(/nests deeper than/),
    });
    expect(await errorOf(await registerJson("a string"))).toMatchObject({
      status: 400,
      error: "invalid_client_metadata",
    });
    expect(await errorOf(await registerJson(null))).toMatchObject({
      status: 400,
      error: "invalid_client_metadata",
    });
    const huge = await registerJson({ redirect_uris: [REDIRECT], client_name: "x".repeat(70_000) });
    expect(await errorOf(huge)).toMatchObject({ status: 413, error: "invalid_request" });
  });
});

describe("the token endpoint: authorization_code", () => {
  it("exchanges a code for an access token for the workspace, and a refresh token", async () => {
    const client = await register();
    const response = await exchange(client.client_id, await issueCode(client.client_id));
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(response.headers.get("pragma")).toBe("no-cache");
    const tokens = await tokensOf(response);
    expect(OAuthTokensSchema.safeParse(tokens).success).toBe(true);
    expect(tokens).toMatchObject({ token_type: "Bearer", expires_in: 900, scope: "mcp:read mcp:write" });
    expect(tokens.refresh_token).toBeDefined();
    const claims = await as.oauth.tokens.verify(tokens.access_token, resource);
    expect(claims).toMatchObject({ sub: ALICE, clientId: client.client_id, audience: resource });
  });

  it("gives no refresh token to a client that did not register the grant", async () => {
    const client = await register({ grant_types: ["authorization_code"] });
    const tokens = await tokensOf(await exchange(client.client_id, await issueCode(client.client_id)));
    expect(tokens.refresh_token).toBeUndefined();
  });

  it("refuses a wrong code_verifier (the challenge itself, as plain PKCE would send) and leaves the code usable", async () => {
    const client = await register();
    const code = await issueCode(client.client_id);
    const plain = await exchange(client.client_id, code, { code_verifier: s256(VERIFIER) });
    expect(await errorOf(plain)).toMatchObject({ status: 400, error: "invalid_grant" });
    await tokensOf(await exchange(client.client_id, code));
  });

  it("refuses a redirect_uri other than the code's", async () => {
    const client = await register();
    const code = await issueCode(client.client_id);
    const response = await exchange(client.client_id, code, { redirect_uri: "http://127.0.0.1/other" });
    expect(await errorOf(response)).toMatchObject({ status: 400, error: "invalid_grant" });
  });

  it("requires redirect_uri when the authorization request had it, and not when it was left out", async () => {
    const client = await register();
    const presented = await issueCode(client.client_id);
    const missing = await exchange(client.client_id, presented, { redirect_uri: "" });
    expect(await errorOf(missing)).toMatchObject({ status: 400, error: "invalid_request" });
    await tokensOf(await exchange(client.client_id, presented));

    const omitted = await issueCode(client.client_id, as, undefined, true);
    const other = await exchange(client.client_id, omitted, { redirect_uri: "http://127.0.0.1/other" });
    expect(await errorOf(other)).toMatchObject({ status: 400, error: "invalid_grant" });
    await tokensOf(await exchange(client.client_id, omitted, { redirect_uri: "" }));
  });

  it("refuses a resource other than the code's with invalid_target; without one, the code's is used", async () => {
    const client = await register();
    const code = await issueCode(client.client_id);
    const foreign = await exchange(client.client_id, code, { resource: workspaceMcpUrl(as.url, OTHER_WS) });
    expect(await errorOf(foreign)).toMatchObject({ status: 400, error: "invalid_target" });
    const elsewhere = await exchange(client.client_id, code, { resource: "https://evil.example/mcp" });
    expect(await errorOf(elsewhere)).toMatchObject({ status: 400, error: "invalid_target" });
    const tokens = await tokensOf(await exchange(client.client_id, code, { resource: "" }));
    await expect(as.oauth.tokens.verify(tokens.access_token, resource)).resolves.toBeDefined();
  });

  it("refuses several resources with invalid_target, as /oauth/authorize does, leaving code and refresh token usable", async () => {
    const client = await register();
    const code = await issueCode(client.client_id);
    const twice = (form: Record<string, string>) => {
      const body = new URLSearchParams(form);
      body.append("resource", resource);
      body.append("resource", workspaceMcpUrl(as.url, OTHER_WS));
      return fetch(`${as.url}/oauth/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: body.toString(),
      });
    };
    const form = { client_id: client.client_id, redirect_uri: REDIRECT, code_verifier: VERIFIER };
    // Before, a repeated resource was invalid_request here while authorize answered invalid_target.
    const exchanged = await twice({ ...form, grant_type: "authorization_code", code });
    expect(await errorOf(exchanged)).toMatchObject({ status: 400, error: "invalid_target" });
    const tokens = await tokensOf(await exchange(client.client_id, code));
    const refreshed = await twice({
      grant_type: "refresh_token",
      client_id: client.client_id,
      refresh_token: tokens.refresh_token as string,
    });
    expect(await errorOf(refreshed)).toMatchObject({ status: 400, error: "invalid_target" });
    await tokensOf(await refresh(client.client_id, tokens.refresh_token as string));
  });

  it("refuses a code issued to another client", async () => {
    const owner = await register();
    const thief = await register();
    const response = await exchange(thief.client_id, await issueCode(owner.client_id));
    expect(await errorOf(response)).toMatchObject({ status: 400, error: "invalid_grant" });
  });

  it("a reused code is refused and revokes the tokens the first exchange issued", async () => {
    const client = await register();
    const code = await issueCode(client.client_id);
    const first = await tokensOf(await exchange(client.client_id, code));
    const again = await exchange(client.client_id, code);
    expect(await errorOf(again)).toMatchObject({ status: 400, error: "invalid_grant" });
    const refreshed = await refresh(client.client_id, first.refresh_token as string);
    expect(await errorOf(refreshed)).toMatchObject({ status: 400, error: "invalid_grant" });
    await expect(as.oauth.tokens.verify(first.access_token, resource)).rejects.toThrow();
  });
});

describe("the token endpoint: refresh_token", () => {
  it("rotates the refresh token, and a replayed one older than the one just replaced revokes the whole family", async () => {
    const client = await register();
    const first = await tokensOf(await exchange(client.client_id, await issueCode(client.client_id)));
    const second = await tokensOf(await refresh(client.client_id, first.refresh_token as string));
    expect(second.refresh_token).not.toBe(first.refresh_token);
    await expect(as.oauth.tokens.verify(second.access_token, resource)).resolves.toBeDefined();
    const third = await tokensOf(await refresh(client.client_id, second.refresh_token as string));

    const replay = await refresh(client.client_id, first.refresh_token as string);
    expect(await errorOf(replay)).toMatchObject({ status: 400, error: "invalid_grant" });
    const afterReplay = await refresh(client.client_id, third.refresh_token as string);
    expect(await errorOf(afterReplay)).toMatchObject({ status: 400, error: "invalid_grant" });
    await expect(as.oauth.tokens.verify(third.access_token, resource)).rejects.toThrow();
  });

  it("two refreshes of one token at once both answer, with one successor, and the family lives (ADR 0136)", async () => {
    const client = await register();
    const first = await tokensOf(await exchange(client.client_id, await issueCode(client.client_id)));
    const [a, b] = await Promise.all([
      refresh(client.client_id, first.refresh_token as string),
      refresh(client.client_id, first.refresh_token as string),
    ]);
    expect([a.status, b.status]).toEqual([200, 200]);
    const [tokensA, tokensB] = [await tokensOf(a), await tokensOf(b)];
    expect(tokensA.refresh_token).toBe(tokensB.refresh_token);
    expect(tokensA.refresh_token).not.toBe(first.refresh_token);
    await expect(as.oauth.tokens.verify(tokensA.access_token, resource)).resolves.toBeDefined();
    await expect(as.oauth.tokens.verify(tokensB.access_token, resource)).resolves.toBeDefined();
    const next = await refresh(client.client_id, tokensA.refresh_token as string);
    expect(next.status).toBe(200);
  });

  it("narrows scopes on request, refuses wider ones, and refuses another resource", async () => {
    const client = await register();
    const first = await tokensOf(
      await exchange(client.client_id, await issueCode(client.client_id, as, ["mcp:read"])),
    );
    const wider = await refresh(client.client_id, first.refresh_token as string, {
      scope: "mcp:read mcp:write",
    });
    expect(await errorOf(wider)).toMatchObject({ status: 400, error: "invalid_scope" });
    const unknown = await refresh(client.client_id, first.refresh_token as string, { scope: "admin" });
    expect(await errorOf(unknown)).toMatchObject({ status: 400, error: "invalid_scope" });
    const foreign = await refresh(client.client_id, first.refresh_token as string, {
      resource: workspaceMcpUrl(as.url, OTHER_WS),
    });
    expect(await errorOf(foreign)).toMatchObject({ status: 400, error: "invalid_target" });
    const same = await tokensOf(
      await refresh(client.client_id, first.refresh_token as string, { scope: "mcp:read" }),
    );
    expect(same.scope).toBe("mcp:read");
  });

  it("refuses refresh to a client that did not register the grant", async () => {
    const client = await register({ grant_types: ["authorization_code"] });
    const response = await refresh(client.client_id, "gnt_0123456789abcdef0123456789abcdef.x");
    expect(await errorOf(response)).toMatchObject({ status: 400, error: "unauthorized_client" });
  });
});

describe("client authentication at the token endpoint", () => {
  function basic(id: string, secret: string): string {
    return `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64")}`;
  }

  it("accepts a confidential client's Basic credentials and refuses a wrong secret with a Basic challenge", async () => {
    const client = await register({ token_endpoint_auth_method: "client_secret_basic" });
    const code = await issueCode(client.client_id);
    const form = { grant_type: "authorization_code", code, redirect_uri: REDIRECT, code_verifier: VERIFIER };
    const wrong = await post("/oauth/token", form, { authorization: basic(client.client_id, "wrong") });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("www-authenticate")).toMatch(/^Basic /);
    expect((await errorOf(wrong)).error).toBe("invalid_client");
    await tokensOf(
      await post("/oauth/token", form, {
        authorization: basic(client.client_id, client.client_secret as string),
      }),
    );
  });

  it("refuses a confidential client that uses a method it did not register", async () => {
    const client = await register({ token_endpoint_auth_method: "client_secret_basic" });
    const response = await post("/oauth/token", {
      grant_type: "refresh_token",
      refresh_token: "x",
      client_id: client.client_id,
      client_secret: client.client_secret as string,
    });
    expect(await errorOf(response)).toMatchObject({ status: 401, error: "invalid_client" });
    expect(response.headers.get("www-authenticate")).toBeNull();
    const anonymous = await post("/oauth/token", {
      grant_type: "refresh_token",
      refresh_token: "x",
      client_id: client.client_id,
    });
    expect(await errorOf(anonymous)).toMatchObject({ status: 401, error: "invalid_client" });
  });

  it("refuses unknown clients and requests with no client at all", async () => {
    const unknown = await refresh("atc_ffffffffffffffffffffffffffffffff", "x");
    expect(await errorOf(unknown)).toMatchObject({ status: 401, error: "invalid_client" });
    const none = await post("/oauth/token", { grant_type: "refresh_token", refresh_token: "x" });
    expect(await errorOf(none)).toMatchObject({ status: 401, error: "invalid_client" });
    const garbage = await post(
      "/oauth/token",
      { grant_type: "refresh_token" },
      { authorization: "Basic !!!" },
    );
    expect(await errorOf(garbage)).toMatchObject({ status: 401, error: "invalid_client" });
  });

  it("answers malformed token requests with the right OAuth error, never a crash", async () => {
    const client = await register();
    const json = await fetch(`${as.url}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ grant_type: "authorization_code" }),
    });
    expect(await errorOf(json)).toMatchObject({ status: 400, error: "invalid_request" });
    const noGrant = await post("/oauth/token", { client_id: client.client_id });
    expect(await errorOf(noGrant)).toMatchObject({ status: 400, error: "invalid_request" });
    const password = await post("/oauth/token", { client_id: client.client_id, grant_type: "password" });
    expect(await errorOf(password)).toMatchObject({ status: 400, error: "unsupported_grant_type" });
    const repeated = await fetch(`${as.url}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `client_id=${client.client_id}&grant_type=refresh_token&grant_type=authorization_code`,
    });
    expect(await errorOf(repeated)).toMatchObject({ status: 400, error: "invalid_request" });
    const missingCode = await post("/oauth/token", {
      client_id: client.client_id,
      grant_type: "authorization_code",
    });
    expect(await errorOf(missingCode)).toMatchObject({ status: 400, error: "invalid_request" });
    const badCode = await exchange(client.client_id, "%%%\u0000");
    expect(await errorOf(badCode)).toMatchObject({ status: 400, error: "invalid_grant" });
    const huge = await post("/oauth/token", { client_id: client.client_id, grant_type: "x".repeat(20_000) });
    expect(await errorOf(huge)).toMatchObject({ status: 413, error: "invalid_request" });
  });
});

describe("revocation", () => {
  it("revoking a refresh token ends its grant, access tokens included", async () => {
    const client = await register();
    const tokens = await tokensOf(await exchange(client.client_id, await issueCode(client.client_id)));
    const response = await post("/oauth/revoke", {
      client_id: client.client_id,
      token: tokens.refresh_token as string,
      token_type_hint: "refresh_token",
    });
    expect(response.status).toBe(200);
    expect(await errorOf(await refresh(client.client_id, tokens.refresh_token as string))).toMatchObject({
      error: "invalid_grant",
    });
    await expect(as.oauth.tokens.verify(tokens.access_token, resource)).rejects.toThrow();
  });

  it("revoking an access token ends its grant", async () => {
    const client = await register();
    const tokens = await tokensOf(await exchange(client.client_id, await issueCode(client.client_id)));
    const response = await post("/oauth/revoke", { client_id: client.client_id, token: tokens.access_token });
    expect(response.status).toBe(200);
    await expect(as.oauth.tokens.verify(tokens.access_token, resource)).rejects.toThrow();
    expect(await errorOf(await refresh(client.client_id, tokens.refresh_token as string))).toMatchObject({
      error: "invalid_grant",
    });
  });

  it("answers 200 for unknown tokens and another client's, and changes nothing", async () => {
    const owner = await register();
    const other = await register();
    const tokens = await tokensOf(await exchange(owner.client_id, await issueCode(owner.client_id)));
    for (const token of ["nonsense", tokens.access_token, tokens.refresh_token as string]) {
      const response = await post("/oauth/revoke", { client_id: other.client_id, token });
      expect(response.status).toBe(200);
    }
    await expect(as.oauth.tokens.verify(tokens.access_token, resource)).resolves.toBeDefined();
    await tokensOf(await refresh(owner.client_id, tokens.refresh_token as string));
  });

  it("requires client authentication and a token", async () => {
    const anonymous = await post("/oauth/revoke", { token: "x" });
    expect(await errorOf(anonymous)).toMatchObject({ status: 401, error: "invalid_client" });
    const client = await register();
    const noToken = await post("/oauth/revoke", { client_id: client.client_id });
    expect(await errorOf(noToken)).toMatchObject({ status: 400, error: "invalid_request" });
  });
});

describe("signing key rotation", () => {
  it("is refused to anyone but an org admin", async () => {
    const response = await fetch(`${as.url}/v1/oauth/signing-keys/rotate`, {
      method: "POST",
      headers: { "x-test-user": "member-bob" },
    });
    expect(response.status).toBe(403);
  });

  it("makes a new signing key; tokens signed by the old one keep working", async () => {
    const client = await register();
    const before = await tokensOf(await exchange(client.client_id, await issueCode(client.client_id)));
    const response = await fetch(`${as.url}/v1/oauth/signing-keys/rotate`, {
      method: "POST",
      headers: { "x-test-user": "orgadmin-ann" },
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { current: string; kids: string[] };
    expect(body.kids[0]).toBe(body.current);
    expect(body.kids.length).toBeGreaterThanOrEqual(2);
    const jwks = (await (await fetch(`${as.url}/oauth/jwks`)).json()) as { keys: { kid: string }[] };
    expect(jwks.keys.map((key) => key.kid)).toEqual(body.kids);
    await expect(as.oauth.tokens.verify(before.access_token, resource)).resolves.toBeDefined();
  });
});

describe("client ID metadata documents", () => {
  let documents: Server;
  let documentBase: string;
  let open: RunningOAuth;
  let fetches = 0;

  beforeAll(async () => {
    documents = createServer((req, res) => {
      fetches += 1;
      const self = `${documentBase}${req.url}`;
      res.writeHead(200, {
        "content-type": "application/json",
        ...(req.url?.includes("no-store") ? { "cache-control": "no-store" } : {}),
      });
      res.end(JSON.stringify({ client_id: self, client_name: "Doc client", redirect_uris: [REDIRECT] }));
    });
    await new Promise<void>((resolve) => documents.listen(0, "127.0.0.1", resolve));
    documentBase = `http://127.0.0.1:${(documents.address() as AddressInfo).port}`;
    open = await startOAuth(true);
  });

  afterAll(async () => {
    documents?.closeAllConnections();
    await new Promise((resolve) => documents?.close(resolve));
    await open?.close();
  });

  /** A code issued to the document's client, exchanged at the token endpoint. */
  async function exchangeCodeOf(clientId: string): Promise<Response> {
    const code = await issueCode(clientId, open);
    return fetch(`${open.url}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        client_id: clientId,
        code,
        redirect_uri: REDIRECT,
        code_verifier: VERIFIER,
      }).toString(),
    });
  }

  it("is refused when it is at a private address and the instance does not allow that", async () => {
    const port = new URL(documentBase).port;
    const clientId = `https://127.0.0.1:${port}/client.json`;
    // A code stored for the client: only a request that presents one makes Atrium fetch (ADR 0156).
    const response = await exchange(clientId, await issueCode(clientId));
    const { status, error, description } = await errorOf(response);
    expect(status).toBe(401);
    expect(error).toBe("invalid_client");
    expect(description).toMatch(/is not at a public internet address, which this instance requires/);
    expect(description).not.toMatch(/loopback|resolves/);
    const httpId = `${documentBase}/client.json`;
    const http = await errorOf(await exchange(httpId, await issueCode(httpId)));
    expect(http.description).toMatch(/must be an https URL/);
  });

  it("is fetched at most oauth.clientMetadataFetchesPerHour times per connecting address", async () => {
    const limited = await startOAuth(true, 100, 2);
    try {
      const attempt = async (n: number) => {
        const clientId = `${documentBase}/limit-no-store-${n}.json`;
        const code = await issueCode(clientId, limited);
        return fetch(`${limited.url}/oauth/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({
            grant_type: "authorization_code",
            client_id: clientId,
            code,
            redirect_uri: REDIRECT,
            code_verifier: VERIFIER,
          }).toString(),
        });
      };
      for (const n of [1, 2]) expect((await attempt(n)).status).toBe(200);
      const refused = await errorOf(await attempt(3));
      expect(refused).toMatchObject({ status: 429, error: "too_many_requests" });
      expect(refused.description).toMatch(/Too many client metadata documents/);
    } finally {
      await limited.close();
    }
  });

  it("a flood of token and revocation requests presenting nothing issued fetches none, and a real exchange from the same address goes through", async () => {
    // Three: the real client's exchange, refresh and revocation each fetch its no-store document.
    const limited = await startOAuth(true, 100, 3);
    try {
      const form = (body: Record<string, string>, path = "/oauth/token") =>
        fetch(`${limited.url}${path}`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams(body).toString(),
        });
      const before = fetches;
      for (let n = 0; n < 6; n++) {
        const client_id = `${documentBase}/flood-no-store-${n}.json`;
        const code = await form({
          grant_type: "authorization_code",
          client_id,
          code: "c".repeat(43),
          redirect_uri: REDIRECT,
          code_verifier: VERIFIER,
        });
        expect(await errorOf(code)).toMatchObject({ status: 400, error: "invalid_grant" });
        const refreshed = await form({
          grant_type: "refresh_token",
          client_id,
          refresh_token: `gnt_${"0".repeat(32)}.${"s".repeat(43)}`,
        });
        expect(await errorOf(refreshed)).toMatchObject({ status: 400, error: "invalid_grant" });
        expect((await form({ client_id, token: "x" }, "/oauth/revoke")).status).toBe(200);
      }
      // Before, each of these fetched its document, charged to this address: the third was a 429.
      expect(fetches).toBe(before);
      const clientId = `${documentBase}/real-no-store.json`;
      const code = await issueCode(clientId, limited);
      const tokens = await tokensOf(
        await form({
          grant_type: "authorization_code",
          client_id: clientId,
          code,
          redirect_uri: REDIRECT,
          code_verifier: VERIFIER,
        }),
      );
      expect(fetches).toBe(before + 1);
      await tokensOf(
        await form({
          grant_type: "refresh_token",
          client_id: clientId,
          refresh_token: tokens.refresh_token as string,
        }),
      );
      const revoked = await form({ client_id: clientId, token: tokens.access_token }, "/oauth/revoke");
      expect(revoked.status).toBe(200);
      expect(fetches).toBe(before + 3);
      const claims = await limited.oauth.tokens.inspect(tokens.access_token);
      expect(limited.oauth.grants.isRevoked(claims?.grantId as string)).toBe(true);
    } finally {
      await limited.close();
    }
  });

  it("is fetched and used as the client when the instance allows private addresses", async () => {
    const clientId = `${documentBase}/client.json`;
    const response = await exchangeCodeOf(clientId);
    const tokens = await tokensOf(response);
    const claims = await open.oauth.tokens.verify(tokens.access_token, workspaceMcpUrl(open.url, WS));
    expect(claims.clientId).toBe(clientId);
    expect(await open.oauth.clients.find(clientId, "127.0.0.1")).toMatchObject({ client_name: "Doc client" });
  });

  it("names its grant in the person's list from the exchange, never by fetching it again", async () => {
    const clientId = `${documentBase}/listed-no-store.json`;
    const exchanged = await exchangeCodeOf(clientId);
    const claims = await open.oauth.tokens.verify(
      (await tokensOf(exchanged)).access_token,
      workspaceMcpUrl(open.url, WS),
    );
    const before = fetches;
    // The document is not cached: a name taken from it now would be a fetch.
    expect(await open.oauth.clients.storedName(clientId)).toBeUndefined();
    expect((await open.oauth.grants.get(claims.grantId))?.clientName).toBe("Doc client");
    expect(fetches).toBe(before);
  });
});
