import { randomBytes } from "node:crypto";
import {
  type CallToolResult,
  Client,
  type OAuthClientInformationMixed,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  type OAuthTokens,
  StreamableHTTPClientTransport,
  UnauthorizedError,
} from "@modelcontextprotocol/client";
import type { Browser, BrowserContext } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunningAtrium } from "../../src/server.ts";
import {
  launchChromium,
  newLoopbackContext,
  passProviderPages,
  signInWithBrowser,
  startRedirectCatcher,
} from "../helpers/browser.ts";
import { type OidcAtrium, startOidcAtrium } from "../helpers/oidc-atrium.ts";
import { startOidcIssuer, type TestIssuer } from "../helpers/oidc-issuer.ts";

/**
 * An MCP client's OAuth state, kept in memory as a desktop client would keep it on disk.
 * `redirectToAuthorization` only records the URL: the test plays the person in a browser.
 */
class RecordingOAuthProvider implements OAuthClientProvider {
  authorizationUrl: URL | undefined;
  sentState: string | undefined;
  private client: OAuthClientInformationMixed | undefined;
  private saved: OAuthTokens | undefined;
  private verifier = "";
  private discovery: OAuthDiscoveryState | undefined;

  constructor(readonly redirectUrl: string) {}

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: "SDK end-to-end client",
      redirect_uris: [this.redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  state(): string {
    this.sentState = randomBytes(16).toString("base64url");
    return this.sentState;
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
  // Kept with the verifier, as the SDK asks, so the code is redeemed at the authorization
  // server that minted it (SEP-2352), which the SDK checks only when it can read this back.
  saveDiscoveryState(state: OAuthDiscoveryState) {
    this.discovery = state;
  }
  discoveryState() {
    return this.discovery;
  }
  /** Spoils the access token, as if it had expired, keeping the refresh token. */
  spoilAccessToken() {
    if (this.saved) this.saved = { ...this.saved, access_token: "expired.access.token" };
  }
}

let issuer: TestIssuer;
let running: OidcAtrium;
let atrium: RunningAtrium;
let browser: Browser;
let catcher: Awaited<ReturnType<typeof startRedirectCatcher>>;
let workspaceA: string;
let workspaceB: string;

async function contextSignedIn(login: string): Promise<BrowserContext> {
  const context = await newLoopbackContext(browser);
  await signInWithBrowser(await context.newPage(), atrium.url, login);
  return context;
}

beforeAll(async () => {
  issuer = await startOidcIssuer();
  running = await startOidcAtrium(issuer);
  atrium = running.atrium;
  browser = await launchChromium();
  catcher = await startRedirectCatcher();

  // Alice signs in once to get her first workspace and a second one, over REST with her cookie.
  const setup = await contextSignedIn("alice");
  const bootstrap = await setup.request.get(`${atrium.url}/v1/bootstrap`);
  workspaceA = ((await bootstrap.json()) as { workspaces: Array<{ id: string }> }).workspaces[0]
    ?.id as string;
  const second = await setup.request.post(`${atrium.url}/v1/workspaces`, {
    data: { name: "Second" },
    headers: { origin: atrium.url },
  });
  expect(second.status()).toBe(201);
  workspaceB = ((await second.json()) as { id: string }).id;
  await setup.close();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await catcher?.close();
  await running?.stop();
  await issuer?.close();
});

describe("an MCP client authorizes with the SDK's own OAuth support", () => {
  it("discovers, registers, sends the person through sign-in and consent, calls a tool, refreshes", async () => {
    const mcpUrl = new URL(`${atrium.url}/mcp/${workspaceA}`);
    const provider = new RecordingOAuthProvider(catcher.redirectUri);

    // 1. Unauthorized: the SDK follows the challenge to the resource metadata, the
    //    authorization server metadata and dynamic registration, then wants a browser.
    const first = new Client({ name: "e2e", version: "1.0.0" });
    await expect(
      first.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider })),
    ).rejects.toBeInstanceOf(UnauthorizedError);
    const authorizationUrl = provider.authorizationUrl as URL;
    expect(`${authorizationUrl.origin}${authorizationUrl.pathname}`).toBe(`${atrium.url}/oauth/authorize`);
    expect(authorizationUrl.searchParams.get("resource")).toBe(mcpUrl.href);
    expect(authorizationUrl.searchParams.get("code_challenge_method")).toBe("S256");
    expect(provider.clientInformation()?.client_id).toMatch(/^atc_/);

    // 2. The person, in a fresh browser: Atrium sends them to the provider to sign in, back
    //    to the consent page, and on Allow to the client's redirect URI.
    const context = await newLoopbackContext(browser);
    const page = await context.newPage();
    const landing = await passProviderPages(
      page,
      authorizationUrl.href,
      "alice",
      (url) => url.origin === atrium.url,
    );
    // The callback's 303 back to /oauth/authorize is followed within the same navigation.
    expect(landing.url.pathname).toBe("/oauth/authorize");
    const consent = (await page.textContent("main")) as string;
    expect(consent).toContain("SDK end-to-end client");
    expect(consent).toContain("alice's workspace");
    expect(consent).toContain("mcp:write");
    await page.getByRole("button", { name: "Allow" }).click();
    await page.waitForURL((url) => url.href.startsWith(catcher.redirectUri));
    const redirect = new URL(page.url());
    await context.close();
    // The SDK leaves `state` to the client; `iss` it checks itself when handed the whole callback
    // (below), and refuses a callback without it since Atrium's metadata says it sends one.
    expect(redirect.searchParams.get("state")).toBe(provider.sentState);
    expect(redirect.searchParams.get("iss")).toBe(atrium.url);

    // 3. The code for tokens, then a new transport with them: tools are reachable.
    const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
    await transport.finishAuth(redirect.searchParams);
    const tokens = provider.tokens() as OAuthTokens;
    expect(tokens.refresh_token).toBeTruthy();
    const client = new Client({ name: "e2e", version: "1.0.0" });
    await client.connect(transport);
    const written = (await client.callTool({
      name: "files__write",
      arguments: { name: "from-oauth.txt", text: "hello" },
    })) as CallToolResult;
    expect(written.isError ?? false).toBe(false);

    // 4. The access token lapses: the SDK refreshes on the 401 and the call goes through,
    //    with a rotated refresh token.
    provider.spoilAccessToken();
    const listed = await client.listTools();
    expect(listed.tools.map((tool) => tool.name)).toContain("files__write");
    const refreshed = provider.tokens() as OAuthTokens;
    expect(refreshed.access_token).not.toBe("expired.access.token");
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    await client.close();

    // 5. The same token at another workspace of the same person is refused.
    const elsewhere = await fetch(`${atrium.url}/mcp/${workspaceB}`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${refreshed.access_token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(elsewhere.status).toBe(401);
    expect(elsewhere.headers.get("www-authenticate")).toContain(
      `resource_metadata="${atrium.url}/.well-known/oauth-protected-resource/mcp/${workspaceB}"`,
    );
  }, 60_000);

  it("the signed-in home page lists the person's workspaces with the URL to give a client", async () => {
    const context = await contextSignedIn("alice");
    const page = await context.newPage();
    await page.goto(`${atrium.url}/`);
    const text = (await page.textContent("main")) as string;
    expect(text).toContain(`${atrium.url}/mcp/${workspaceA}`);
    expect(text).toContain(`${atrium.url}/mcp/${workspaceB}`);
    await context.close();
    const bob = await contextSignedIn("bob");
    const bobPage = await bob.newPage();
    await bobPage.goto(`${atrium.url}/`);
    expect(await bobPage.textContent("main")).not.toContain(workspaceA);
    await bob.close();
  }, 30_000);
});
