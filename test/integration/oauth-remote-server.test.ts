import {
  Client,
  discoverOAuthServerInfo,
  exchangeAuthorization,
  type OAuthClientInformationFull,
  type OAuthServerInfo,
  type OAuthTokens,
  refreshAuthorization,
  registerClient,
  StreamableHTTPClientTransport,
  startAuthorization,
  validateAuthorizationResponseIssuer,
} from "@modelcontextprotocol/client";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { launchChromium, newLoopbackContext, startRedirectCatcher } from "../helpers/browser.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { authorizeInBrowser, authorizeUntilCallback, deliverCallback } from "../helpers/oauth-browser.ts";
import { type OAuthRemoteServer, startOAuthRemoteServer } from "../helpers/oauth-remote-server.ts";

const TTL_SECONDS = 60;
/** A client registered at the authorization server by hand, as an operator would configure one. */
const CONFIGURED = { client_id: "configured-client", client_secret: "configured-client-secret" };

let browser: Browser;
let catcher: Awaited<ReturnType<typeof startRedirectCatcher>>;
let time: FakeTime;
let server: OAuthRemoteServer;
let context: BrowserContext;
let page: Page;

beforeAll(async () => {
  browser = await launchChromium();
  catcher = await startRedirectCatcher();
});
afterAll(async () => {
  await browser?.close();
  await catcher?.close();
});
beforeEach(async () => {
  time = new FakeTime();
  server = await startOAuthRemoteServer({
    accessTokenTtlSeconds: TTL_SECONDS,
    clock: time.clock,
    clients: [
      {
        client_id: CONFIGURED.client_id,
        client_secret: CONFIGURED.client_secret,
        redirect_uris: [catcher.redirectUri],
        grant_types: ["authorization_code", "refresh_token"],
        token_endpoint_auth_method: "client_secret_basic",
      },
    ],
  });
  context = await newLoopbackContext(browser);
  page = await context.newPage();
});
afterEach(async () => {
  await context?.close();
  await server?.close();
});

/** A client as an MCP host would be: discovered from the server's 401, registered dynamically. */
async function discoverAndRegister(): Promise<{ info: OAuthServerInfo; client: OAuthClientInformationFull }> {
  const info = await discoverOAuthServerInfo(server.url, {
    resourceMetadataUrl: new URL(server.resourceMetadataUrl),
  });
  const client = await registerClient(info.authorizationServerUrl, {
    metadata: info.authorizationServerMetadata,
    clientMetadata: {
      client_name: "fixture test",
      redirect_uris: [catcher.redirectUri],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    },
  });
  return { info, client };
}

/** Authorization code flow with PKCE and `resource`, signed in and consented in Chromium. */
async function authorize(
  scope: string,
  registered?: Awaited<ReturnType<typeof discoverAndRegister>>,
  resource: URL | null = new URL(server.url),
) {
  const { info, client } = registered ?? (await discoverAndRegister());
  const { authorizationUrl, codeVerifier } = await startAuthorization(info.authorizationServerUrl, {
    metadata: info.authorizationServerMetadata,
    clientInformation: client,
    redirectUrl: catcher.redirectUri,
    scope,
    state: "state-1",
    ...(resource ? { resource } : {}),
  });
  const landing = await authorizeInBrowser(page, authorizationUrl.href, {
    issuer: server.issuer,
    login: "alice",
  });
  const code = landing.url.searchParams.get("code");
  if (code === null) throw new Error(`no code: ${landing.url.href}`);
  const tokens = await exchangeAuthorization(info.authorizationServerUrl, {
    metadata: info.authorizationServerMetadata,
    clientInformation: client,
    authorizationCode: code,
    iss: landing.url.searchParams.get("iss") ?? undefined,
    codeVerifier,
    redirectUri: catcher.redirectUri,
    ...(resource ? { resource } : {}),
  });
  return { info, client, tokens, landing };
}

function refresh(flow: Awaited<ReturnType<typeof authorize>>, refreshToken: string): Promise<OAuthTokens> {
  return refreshAuthorization(flow.info.authorizationServerUrl, {
    metadata: flow.info.authorizationServerMetadata,
    clientInformation: flow.client,
    refreshToken,
    resource: new URL(server.url),
  });
}

function callTool(accessToken: string, name: string, args: Record<string, unknown> = {}): Promise<Response> {
  return fetch(server.url, {
    method: "POST",
    headers: {
      authorization: `Bearer ${accessToken}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-11-25",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
  });
}

describe("the OAuth-protected MCP server fixture", () => {
  it("answers a request without a token 401 with the way to its metadata and the authorization server's", async () => {
    const refused = await fetch(server.url, { method: "POST", body: "{}" });
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toBe(
      `Bearer resource_metadata="${server.resourceMetadataUrl}", scope="read"`,
    );
    const prm = (await (await fetch(server.resourceMetadataUrl)).json()) as Record<string, unknown>;
    expect(prm).toMatchObject({ resource: server.url, authorization_servers: [server.issuer] });
    const asm = (await (
      await fetch(`${server.issuer}/.well-known/oauth-authorization-server`)
    ).json()) as Record<string, unknown>;
    expect(asm).toMatchObject({
      issuer: server.issuer,
      code_challenge_methods_supported: ["S256"],
      authorization_response_iss_parameter_supported: true,
    });
    expect(asm.registration_endpoint).toBe(`${server.issuer}/reg`);
  });

  it("serves an SDK client holding a token from the browser flow, and 403s the write tool with the scopes it needs", async () => {
    const flow = await authorize("read");
    expect(flow.landing.url.searchParams.get("iss")).toBe(server.issuer);
    expect(server.registrations()).toBe(1);
    expect(server.tokenRequestCounts()).toEqual({ authorization_code: 1 });
    expect(server.authorizationRequests()).toMatchObject([
      { scope: "read", resource: server.url, codeChallengeMethod: "S256" },
    ]);
    expect(flow.tokens.expires_in).toBe(TTL_SECONDS);
    expect(flow.tokens.refresh_token).toBeTruthy();

    const client = new Client({ name: "fixture-test", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(server.url), {
        requestInit: { headers: { authorization: `Bearer ${flow.tokens.access_token}` } },
      }),
    );
    const whoami = await client.callTool({ name: "whoami", arguments: {} });
    expect(whoami.structuredContent).toEqual({
      sub: "alice",
      clientId: flow.client.client_id,
      scopes: ["read"],
    });
    await client.close();

    const forbidden = await callTool(flow.tokens.access_token, "write_note", { text: "hi" });
    expect(forbidden.status).toBe(403);
    expect(forbidden.headers.get("www-authenticate")).toContain(
      'error="insufficient_scope", scope="read write"',
    );
    expect(server.calls().map((c) => c.tool)).toEqual(["whoami"]);

    // Step-up: authorizing again for the union of scopes (consent asked again) gets a token that may write.
    const wider = await authorize("read write", flow);
    expect((await callTool(wider.tokens.access_token, "write_note", { text: "hi" })).status).toBe(200);
  });

  it("rotates the refresh token, and a reused one revokes the whole family", async () => {
    const flow = await authorize("read");
    const first = flow.tokens.refresh_token as string;
    const rotated = await refresh(flow, first);
    expect(rotated.refresh_token).toBeTruthy();
    expect(rotated.refresh_token).not.toBe(first);
    expect((await callTool(rotated.access_token, "whoami")).status).toBe(200);
    await expect(refresh(flow, first)).rejects.toMatchObject({ code: "invalid_grant" });
    await expect(refresh(flow, rotated.refresh_token as string)).rejects.toMatchObject({
      code: "invalid_grant",
    });
    expect(server.tokenRequestCounts()).toEqual({ authorization_code: 1, refresh_token: 3 });
    expect(server.tokenRequests().map((r) => r.outcome)).toEqual([
      "ok",
      "ok",
      "invalid_grant",
      "invalid_grant",
    ]);
  });

  it("refuses an access token once the injected clock passes its lifetime, or when told to", async () => {
    const flow = await authorize("read");
    await time.advance(TTL_SECONDS * 1000 - 1);
    expect((await callTool(flow.tokens.access_token, "whoami")).status).toBe(200);
    await time.advance(1);
    const expired = await callTool(flow.tokens.access_token, "whoami");
    expect(expired.status).toBe(401);
    expect(expired.headers.get("www-authenticate")).toContain('error="invalid_token"');
    const fresh = await refresh(flow, flow.tokens.refresh_token as string);
    expect((await callTool(fresh.access_token, "whoami")).status).toBe(200);
    server.expireAccessTokens();
    expect((await callTool(fresh.access_token, "whoami")).status).toBe(401);
  });

  it("answers invalid_grant to every refresh once the grants are revoked", async () => {
    const flow = await authorize("read");
    await server.revokeAllGrants();
    await expect(refresh(flow, flow.tokens.refresh_token as string)).rejects.toMatchObject({
      code: "invalid_grant",
    });
    const again = await authorize("read");
    await server.revokeRefreshToken(again.tokens.refresh_token as string);
    await expect(refresh(again, again.tokens.refresh_token as string)).rejects.toMatchObject({
      code: "invalid_grant",
    });
  });

  it("grants nothing to a request without `resource`, and refuses a forged token and a resource it does not serve", async () => {
    // Without `resource` the provider knows no resource whose scope `read` is: nothing is granted.
    await expect(authorize("read", undefined, null)).rejects.toThrow(/error=access_denied/);
    const flow = await authorize("read");
    const [header, payload] = flow.tokens.access_token.split(".") as [string, string];
    expect((await callTool(`${header}.${payload}.AAAA`, "whoami")).status).toBe(401);
    await expect(
      refreshAuthorization(flow.info.authorizationServerUrl, {
        metadata: flow.info.authorizationServerMetadata,
        clientInformation: flow.client,
        refreshToken: flow.tokens.refresh_token as string,
        resource: new URL("http://127.0.0.1:9/elsewhere"),
      }),
    ).rejects.toMatchObject({ code: "invalid_target" });
  });

  it("serves a pre-registered confidential client, and refuses it with a wrong secret", async () => {
    const info = await discoverOAuthServerInfo(server.url, {
      resourceMetadataUrl: new URL(server.resourceMetadataUrl),
    });
    const client = { ...CONFIGURED, redirect_uris: [catcher.redirectUri] };
    const flow = await authorize("read", { info, client });
    expect(server.registrations()).toBe(0);
    expect((await callTool(flow.tokens.access_token, "whoami")).status).toBe(200);
    await expect(
      refresh(
        { ...flow, client: { ...client, client_secret: "wrong" } },
        flow.tokens.refresh_token as string,
      ),
    ).rejects.toMatchObject({ code: "invalid_client" });
    await expect(server.revokeRefreshToken("not-a-refresh-token")).rejects.toThrow(/no such refresh token/);
  });

  it("can misbehave: a wrong or missing iss on the response, a metadata issuer that differs, no S256", async () => {
    const { info, client } = await discoverAndRegister();
    server.misbehave({ issInResponse: "wrong" });
    const { authorizationUrl } = await startAuthorization(info.authorizationServerUrl, {
      metadata: info.authorizationServerMetadata,
      clientInformation: client,
      redirectUrl: catcher.redirectUri,
      scope: "read",
      resource: new URL(server.url),
    });
    const before = catcher.received().length;
    const held = await authorizeUntilCallback(page, authorizationUrl.href, {
      issuer: server.issuer,
      login: "alice",
    });
    expect(held.searchParams.get("code")).toBeTruthy();
    expect(() =>
      validateAuthorizationResponseIssuer({
        iss: held.searchParams.get("iss") ?? undefined,
        expectedIssuer: server.issuer,
        issParameterSupported: true,
      }),
    ).toThrow();
    // Held means the redirect URI never saw it; delivering it is what sends it, once.
    expect(catcher.received().length).toBe(before);
    expect((await deliverCallback(page, held)).text).toBe("redirect received");
    expect(catcher.received().slice(before)).toEqual([`${held.pathname}${held.search}`]);

    server.misbehave({ issInResponse: "missing" });
    const second = await startAuthorization(info.authorizationServerUrl, {
      metadata: info.authorizationServerMetadata,
      clientInformation: client,
      redirectUrl: catcher.redirectUri,
      scope: "read",
      resource: new URL(server.url),
    });
    const landing = await authorizeInBrowser(page, second.authorizationUrl.href, {
      issuer: server.issuer,
      login: "alice",
    });
    expect(landing.url.searchParams.has("code")).toBe(true);
    expect(landing.url.searchParams.has("iss")).toBe(false);

    server.misbehave({ wrongIssuerInMetadata: true, omitS256: true });
    const metadata = (await (
      await fetch(`${server.issuer}/.well-known/oauth-authorization-server`)
    ).json()) as Record<string, unknown>;
    expect(metadata.issuer).not.toBe(server.issuer);
    expect(metadata).not.toHaveProperty("code_challenge_methods_supported");
    await expect(
      discoverOAuthServerInfo(server.url, { resourceMetadataUrl: new URL(server.resourceMetadataUrl) }),
    ).rejects.toThrow();
  });
});
