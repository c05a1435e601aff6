import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { derivePrincipalId } from "../../src/identity/principal.ts";
import type { RunningAtrium } from "../../src/server.ts";
import { type OidcAtrium, startOidcAtrium } from "../helpers/oidc-atrium.ts";
import {
  signInOverHttp,
  startOidcIssuer,
  TEST_AUDIENCE,
  type TestIssuer,
  testAccount,
} from "../helpers/oidc-issuer.ts";

// Security 9 of issue 10: the stored profile was rewritten from whatever credential each
// request used, so a provider access token without an email claim blanked the email the
// person signed in with (and with it, adding them by email).

let issuer: TestIssuer;
let running: OidcAtrium;
let atrium: RunningAtrium;

beforeAll(async () => {
  issuer = await startOidcIssuer();
  running = await startOidcAtrium(issuer);
  atrium = running.atrium;
});

afterAll(async () => {
  await running?.stop();
  await issuer?.close();
});

describe("the stored profile", () => {
  it("is what a signed-in session acts as: a demotion recorded after the sign-in holds at once", async () => {
    const login = "orgadmin-demoted";
    const id = derivePrincipalId(issuer.issuer, login);
    const account = testAccount(login);
    const cookie = await signInOverHttp(atrium.url, login);
    const users = () => fetch(`${atrium.url}/v1/users`, { headers: { cookie } });
    expect((await users()).status).toBe(200);
    // What a later sign-in elsewhere records (a provider token records no role, ADR 0071).
    await atrium.users.record({
      id,
      displayName: account.name,
      email: "moved@example.test",
      orgRole: "member",
    });
    expect((await users()).status).toBe(403);
    const bootstrap = await fetch(`${atrium.url}/v1/bootstrap`, { headers: { cookie } });
    expect(((await bootstrap.json()) as { principal: unknown }).principal).toMatchObject({
      email: "moved@example.test",
      orgRole: "member",
    });
  });

  it("keeps the name, email and org role from sign-in when an access token states none of them, and the token acts with them", async () => {
    const login = "orgadmin-profile";
    const id = derivePrincipalId(issuer.issuer, login);
    const account = testAccount(login);
    await signInOverHttp(atrium.url, login);
    const signedIn = { id, displayName: account.name, email: account.email, orgRole: "admin" };
    expect(await atrium.users.get(id)).toEqual(signedIn);

    const { accessToken } = await issuer.signInTokens(atrium.url, login, TEST_AUDIENCE);
    const claims = decodeJwt(accessToken);
    expect(claims).toMatchObject({ sub: login, aud: TEST_AUDIENCE });
    expect(claims.email ?? claims.name ?? claims.groups).toBeUndefined();
    const response = await fetch(`${atrium.url}/v1/bootstrap`, {
      headers: { authorization: `Bearer ${accessToken}` },
    });
    expect(response.status).toBe(200);
    // The directory still knows the person as they signed in, and the request acts as it does.
    expect(((await response.json()) as { principal: unknown }).principal).toEqual(signedIn);
    expect(await atrium.users.get(id)).toEqual(signedIn);
    expect(await atrium.users.findByEmail(account.email)).toMatchObject({ id });
  });
});
