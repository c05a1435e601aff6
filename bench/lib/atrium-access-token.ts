import { createHash, randomBytes } from "node:crypto";
import { clip } from "./tool-result.ts";

// Gets an Atrium access token for one workspace MCP URL the way an MCP client does, over HTTP
// against the running instance: sign in (implicit under `dev`), register, authorize with PKCE,
// approve the consent page, exchange the code. Nothing is minted from the instance's keys on disk,
// so the token the bench loads with is exactly what a real client would present.

const REDIRECT_URI = "http://127.0.0.1:3999/callback";
const SCOPES = "mcp:read mcp:write";
const TIMEOUT_MS = 10_000;

export async function obtainAccessToken(base: string, mcpUrl: string): Promise<string> {
  const cookie = await signIn(base);
  const clientId = await registerClient(base);
  const verifier = randomBytes(32).toString("base64url");
  const challenge = createHash("sha256").update(verifier).digest("base64url");

  const query = new URLSearchParams({
    response_type: "code",
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    code_challenge: challenge,
    code_challenge_method: "S256",
    resource: mcpUrl,
    scope: SCOPES,
    state: randomBytes(8).toString("hex"),
  });
  const consent = await send("GET /oauth/authorize", 200, `${base}/oauth/authorize?${query}`, {
    headers: { cookie },
  });
  const requestId = /name="request" value="([^"]+)"/.exec(await consent.text())?.[1];
  if (!requestId) throw new Error("GET /oauth/authorize: the consent page carries no request id");

  const decision = await send("POST /oauth/authorize", 303, `${base}/oauth/authorize`, {
    method: "POST",
    // The consent form is cookie-authenticated, so Atrium checks that it came from its own origin.
    headers: { cookie, origin: base, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ request: requestId, decision: "approve" }),
  });
  const code = new URL(decision.headers.get("location") ?? "", base).searchParams.get("code");
  if (!code) throw new Error(`POST /oauth/authorize: no code in ${decision.headers.get("location")}`);

  const token = await send("POST /oauth/token", 200, `${base}/oauth/token`, {
    method: "POST",
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code,
      redirect_uri: REDIRECT_URI,
      client_id: clientId,
      code_verifier: verifier,
      resource: mcpUrl,
    }),
  });
  const accessToken = ((await token.json()) as { access_token?: unknown }).access_token;
  if (typeof accessToken !== "string") throw new Error("POST /oauth/token: no access_token in the answer");
  return accessToken;
}

/** Under `dev`, /auth/login starts the developer's session at once; returns it as a Cookie header. */
async function signIn(base: string): Promise<string> {
  const response = await send("GET /auth/login", 303, `${base}/auth/login`);
  const cookie = response.headers
    .getSetCookie()
    .map((line) => line.split(";")[0] ?? "")
    .filter((pair) => !pair.endsWith("="))
    .join("; ");
  if (!cookie) throw new Error("GET /auth/login: no session cookie was set");
  return cookie;
}

async function registerClient(base: string): Promise<string> {
  const response = await send("POST /oauth/register", 201, `${base}/oauth/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      client_name: "Atrium bench",
      redirect_uris: [REDIRECT_URI],
      token_endpoint_auth_method: "none",
    }),
  });
  const clientId = ((await response.json()) as { client_id?: unknown }).client_id;
  if (typeof clientId !== "string") throw new Error("POST /oauth/register: no client_id in the answer");
  return clientId;
}

// Redirects are never followed: each step's 303 is the answer being checked, not a hop to take.
async function send(step: string, expected: number, url: string, init: RequestInit = {}): Promise<Response> {
  const response = await fetch(url, { ...init, redirect: "manual", signal: AbortSignal.timeout(TIMEOUT_MS) });
  if (response.status !== expected) {
    throw new Error(`${step}: HTTP ${response.status}, expected ${expected}: ${clip(await response.text())}`);
  }
  return response;
}
