import { decodeJwt, decodeProtectedHeader } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunningAtrium } from "../../src/server.ts";
import { type OidcAtrium, startOidcAtrium } from "../helpers/oidc-atrium.ts";
import {
  CLIENT_AUDIENCE_RESOURCE,
  oidcSignInAuth,
  startOidcIssuer,
  type TestIssuer,
} from "../helpers/oidc-issuer.ts";

// Security 1 of issue 10: with the default `auth.audience` (the client id) a provider's ID
// token passed every check a bearer token got. Real tokens from a real provider: the ID
// token of a sign-in, and the access token issued beside it for the client's own audience.

let issuer: TestIssuer;
let running: OidcAtrium;
let atrium: RunningAtrium;
let tokens: { idToken: string; accessToken: string };
let workspaceId: string;

function rest(path: string, token: string): Promise<Response> {
  return fetch(`${atrium.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
}

function listTools(token: string): Promise<Response> {
  return fetch(`${atrium.url}/mcp/${workspaceId}`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });
}

beforeAll(async () => {
  issuer = await startOidcIssuer();
  // No `audience`: the default, the client id, is what an ID token is addressed to. Atrium's
  // own client is even listed as first-party, so /mcp takes its access tokens directly.
  const { audience: _unset, ...auth } = oidcSignInAuth(issuer);
  running = await startOidcAtrium(issuer, { ...auth, firstPartyClients: [issuer.browserClientId] });
  atrium = running.atrium;
  tokens = await issuer.signInTokens(atrium.url, "alice", CLIENT_AUDIENCE_RESOURCE);
  const bootstrap = await rest("/v1/bootstrap", tokens.accessToken);
  expect(bootstrap.status).toBe(200);
  workspaceId = ((await bootstrap.json()) as { workspaces: Array<{ id: string }> }).workspaces[0]?.id ?? "";
});

afterAll(async () => {
  await running?.stop();
  await issuer?.close();
});

describe("a provider ID token is never a bearer credential", () => {
  it("the two real tokens share issuer, audience and key, so only their kind tells them apart", () => {
    const id = decodeJwt(tokens.idToken);
    const access = decodeJwt(tokens.accessToken);
    expect(id).toMatchObject({ iss: issuer.issuer, aud: issuer.browserClientId, sub: "alice" });
    expect(id.nonce).toEqual(expect.any(String));
    expect(access).toMatchObject({ iss: issuer.issuer, aud: issuer.browserClientId, sub: "alice" });
    expect(decodeProtectedHeader(tokens.accessToken).typ).toBe("at+jwt");
  });

  it("REST refuses the ID token and says to send the access token", async () => {
    const refused = await rest("/v1/bootstrap", tokens.idToken);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/ID token/);
    expect((await rest("/v1/bootstrap", tokens.accessToken)).status).toBe(200);
  });

  it("/mcp refuses the ID token, even for a first-party client, with the challenge", async () => {
    const refused = await listTools(tokens.idToken);
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toContain('error="invalid_token"');
    expect((await listTools(tokens.accessToken)).status).toBe(200);
  });
});
