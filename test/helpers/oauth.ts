import { createHash, randomBytes } from "node:crypto";
import { expect } from "vitest";
import type { TestAtrium } from "./atrium.ts";
import { testPrincipal } from "./atrium.ts";

export const REDIRECT_URI = "http://127.0.0.1:3999/callback";

/**
 * Where the OAuth endpoints are: a TestAtrium, or anything else that knows an instance's
 * base URL. The helpers below only talk HTTP to it.
 */
export type OAuthTarget = Pick<TestAtrium, "url">;

export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}

/** A signed-in browser's cookie for `user`, made by the instance's own session store. */
export async function sessionCookie(t: TestAtrium, user: string): Promise<string> {
  // As the sign-in callback does: the person is known to the directory, then signed in.
  await t.atrium.users.record(testPrincipal(user));
  const setCookie = await t.atrium.sessions.start(testPrincipal(user));
  return setCookie.split(";")[0] as string;
}

export async function registerClient(
  t: OAuthTarget,
  metadata: Record<string, unknown> = {},
): Promise<{ client_id: string; [key: string]: unknown }> {
  const response = await fetch(`${t.url}/oauth/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      client_name: "Test MCP client",
      redirect_uris: [REDIRECT_URI],
      token_endpoint_auth_method: "none",
      ...metadata,
    }),
  });
  expect(response.status).toBe(201);
  return (await response.json()) as { client_id: string };
}

export interface AuthorizeParams {
  clientId: string;
  workspaceId: string;
  challenge: string;
  scope?: string;
  state?: string;
  redirectUri?: string;
  /** Replaces or (with `undefined`) removes any parameter. */
  overrides?: Record<string, string | undefined>;
}

export function authorizeQuery(t: OAuthTarget, params: AuthorizeParams): string {
  const values: Record<string, string | undefined> = {
    response_type: "code",
    client_id: params.clientId,
    redirect_uri: params.redirectUri ?? REDIRECT_URI,
    code_challenge: params.challenge,
    code_challenge_method: "S256",
    resource: `${t.url}/mcp/${params.workspaceId}`,
    scope: params.scope ?? "mcp:read mcp:write",
    state: params.state ?? "state-1",
    ...params.overrides,
  };
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(values)) if (value !== undefined) query.set(name, value);
  return query.toString();
}

/** GET /oauth/authorize with a cookie, without following redirects. */
export function authorize(
  t: OAuthTarget,
  cookie: string | undefined,
  params: AuthorizeParams,
): Promise<Response> {
  return fetch(`${t.url}/oauth/authorize?${authorizeQuery(t, params)}`, {
    redirect: "manual",
    headers: cookie ? { cookie } : {},
  });
}

/** The hidden request id a consent page carries. */
export function consentRequestId(html: string): string {
  const id = /name="request" value="([^"]+)"/.exec(html)?.[1];
  if (!id) throw new Error(`No consent form in: ${html.slice(0, 500)}`);
  return id;
}

export function decide(
  t: OAuthTarget,
  cookie: string,
  requestId: string,
  decision: string,
): Promise<Response> {
  return fetch(`${t.url}/oauth/authorize`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie, "content-type": "application/x-www-form-urlencoded", origin: t.url },
    body: new URLSearchParams({ request: requestId, decision }).toString(),
  });
}

export function tokenRequest(t: OAuthTarget, form: Record<string, string>): Promise<Response> {
  return fetch(`${t.url}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(form).toString(),
  });
}

export interface Tokens {
  access_token: string;
  refresh_token?: string;
  scope: string;
  expires_in: number;
}

/** The whole authorization-code flow for `user` at one workspace, as a client would run it. */
export async function obtainTokens(
  t: TestAtrium,
  user: string,
  workspaceId: string,
  options: { scope?: string; cookie?: string; clientId?: string } = {},
): Promise<Tokens & { clientId: string }> {
  const cookie = options.cookie ?? (await sessionCookie(t, user));
  return obtainTokensWithCookie(t, cookie, workspaceId, options);
}

/**
 * The same flow for whoever the browser session `cookie` belongs to, however they signed
 * in (a session made by sessionCookie(), or a real browser sign-in's cookie).
 */
export async function obtainTokensWithCookie(
  t: OAuthTarget,
  cookie: string,
  workspaceId: string,
  options: { scope?: string; clientId?: string } = {},
): Promise<Tokens & { clientId: string }> {
  const exchange = await approveCode(t, cookie, workspaceId, options);
  const response = await tokenRequest(t, { ...exchange, resource: `${t.url}/mcp/${workspaceId}` });
  expect(response.status, `POST /oauth/token for ${workspaceId}`).toBe(200);
  return { ...((await response.json()) as Tokens), clientId: exchange.client_id };
}

/** The token request that redeems an approved authorization code, as a client sends it. */
export interface CodeExchange extends Record<string, string> {
  grant_type: "authorization_code";
  code: string;
  redirect_uri: string;
  client_id: string;
  code_verifier: string;
}

/**
 * A client (a new one unless `clientId` is given) asks for `workspaceId` and whoever the browser
 * session `cookie` belongs to approves: the code's exchange, for the test to send when it chooses.
 */
export async function approveCode(
  t: OAuthTarget,
  cookie: string,
  workspaceId: string,
  options: { scope?: string; clientId?: string } = {},
): Promise<CodeExchange> {
  const clientId = options.clientId ?? (await registerClient(t)).client_id;
  const { verifier, challenge } = pkcePair();
  const consent = await authorize(t, cookie, { clientId, workspaceId, challenge, scope: options.scope });
  expect(consent.status, `GET /oauth/authorize for ${workspaceId}`).toBe(200);
  const decision = await decide(t, cookie, consentRequestId(await consent.text()), "approve");
  expect(decision.status, `POST /oauth/authorize for ${workspaceId}`).toBe(303);
  const code = new URL(decision.headers.get("location") as string).searchParams.get("code") as string;
  return {
    grant_type: "authorization_code",
    code,
    redirect_uri: REDIRECT_URI,
    client_id: clientId,
    code_verifier: verifier,
  };
}

/** A refresh of `tokens` by the client they were issued to. */
export function refreshTokens(t: OAuthTarget, tokens: Tokens & { clientId: string }): Promise<Response> {
  return tokenRequest(t, {
    grant_type: "refresh_token",
    refresh_token: tokens.refresh_token as string,
    client_id: tokens.clientId,
  });
}

export const LIST_TOOLS = { jsonrpc: "2.0", id: 1, method: "tools/list" };

/** One JSON-RPC request to /mcp/<ws> with a bearer token. */
export function mcpPost(
  t: OAuthTarget,
  workspaceId: string,
  token: string,
  body: unknown,
): Promise<Response> {
  return fetch(`${t.url}/mcp/${workspaceId}`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-11-25",
    },
    body: JSON.stringify(body),
  });
}
