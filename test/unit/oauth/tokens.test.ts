import { decodeJwt, decodeProtectedHeader, generateKeyPair, SignJWT } from "jose";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { accessTokenLifetime } from "../../../src/oauth/grant-record.ts";
import type { Grants } from "../../../src/oauth/grants.ts";
import { SigningKeys } from "../../../src/oauth/keys.ts";
import { AccessTokens } from "../../../src/oauth/tokens.ts";
import {
  ACCESS_TTL_SECONDS,
  newGrants,
  OTHER_RESOURCE,
  PUBLIC_URL,
  person,
  RESOURCE,
  type TestClock,
  tempInstance,
  testClock,
} from "./fixtures.ts";
import { InvalidTokenError } from "./oauth-error-kinds.ts";

const ALICE = person("alice");
const GRANT_ID = "gnt_0123456789abcdef0123456789abcdef";
const CLIENT_ID = "atc_0123456789abcdef0123456789abcdef";

let cleanup: () => Promise<void>;
let clock: TestClock;
let keys: SigningKeys;
let grants: Grants;
let tokens: AccessTokens;

beforeEach(async () => {
  const instance = await tempInstance();
  cleanup = instance.cleanup;
  clock = testClock();
  keys = new SigningKeys(instance.layout, ACCESS_TTL_SECONDS, clock);
  await keys.load();
  grants = newGrants(instance.layout, instance.users, clock);
  // The live grant the tokens name: a token is accepted only while its grant is (an allow-list).
  await grants.create(
    {
      grantId: GRANT_ID,
      clientId: CLIENT_ID,
      principalId: ALICE.id,
      resource: RESOURCE,
      scopes: ["mcp:read"],
    },
    { refresh: false, consentedAt: clock() },
  );
  tokens = new AccessTokens({
    keys,
    grants,
    publicUrl: () => PUBLIC_URL,
    clock,
  });
});

afterEach(() => cleanup());

function issue(audience = RESOURCE) {
  return tokens.issue({
    sub: ALICE.id,
    clientId: CLIENT_ID,
    scopes: ["mcp:read", "mcp:write"],
    audience,
    grantId: GRANT_ID,
    lifetime: accessTokenLifetime(clock(), ACCESS_TTL_SECONDS),
  });
}

/** A token with our claims, header and kid, signed by a key this instance never had. */
async function forged(header: Record<string, unknown> = {}): Promise<string> {
  const { privateKey } = await generateKeyPair("ES256");
  const now = Math.floor(clock() / 1000);
  return new SignJWT({ client_id: "atc_x", scope: "mcp:read", gid: GRANT_ID })
    .setProtectedHeader({ alg: "ES256", typ: "at+jwt", kid: keys.current().kid, ...header })
    .setIssuer(PUBLIC_URL)
    .setAudience(RESOURCE)
    .setSubject(ALICE.id)
    .setJti("j")
    .setIssuedAt(now)
    .setExpirationTime(now + 60)
    .sign(privateKey);
}

describe("AccessTokens", () => {
  it("issues an ES256 at+jwt that verifies for its audience, with the claims it was given", async () => {
    const { token, expiresIn } = await issue();
    expect(expiresIn).toBe(ACCESS_TTL_SECONDS);
    expect(decodeProtectedHeader(token)).toEqual({ alg: "ES256", typ: "at+jwt", kid: keys.current().kid });
    const payload = decodeJwt(token);
    expect(payload).toMatchObject({ iss: PUBLIC_URL, aud: RESOURCE, sub: ALICE.id, gid: GRANT_ID });
    expect(payload.exp).toBe(Math.floor(clock() / 1000) + ACCESS_TTL_SECONDS);
    const claims = await tokens.verify(token, RESOURCE);
    expect(claims).toMatchObject({
      sub: ALICE.id,
      clientId: CLIENT_ID,
      scopes: ["mcp:read", "mcp:write"],
      grantId: GRANT_ID,
      audience: RESOURCE,
    });
  });

  it("refuses a token for another workspace URL", async () => {
    const { token } = await issue();
    await expect(tokens.verify(token, OTHER_RESOURCE)).rejects.toBeInstanceOf(InvalidTokenError);
    await expect(tokens.verify(token, `${RESOURCE}/`)).rejects.toThrow(
      /invalid, expired or not for this resource/,
    );
  });

  it("refuses an expired token, allowing 60 s of clock skew", async () => {
    const { token } = await issue();
    clock.advance((ACCESS_TTL_SECONDS + 30) * 1000);
    await expect(tokens.verify(token, RESOURCE)).resolves.toBeDefined();
    clock.advance(60_000);
    await expect(tokens.verify(token, RESOURCE)).rejects.toBeInstanceOf(InvalidTokenError);
  });

  it("refuses an unsigned token (alg none)", async () => {
    const { token } = await issue();
    const [, payload] = token.split(".");
    const header = Buffer.from(JSON.stringify({ alg: "none", typ: "at+jwt" })).toString("base64url");
    await expect(tokens.verify(`${header}.${payload}.`, RESOURCE)).rejects.toBeInstanceOf(InvalidTokenError);
  });

  it("refuses a token signed by a foreign key, even one that claims our kid", async () => {
    await expect(tokens.verify(await forged(), RESOURCE)).rejects.toBeInstanceOf(InvalidTokenError);
    await expect(tokens.verify(await forged({ kid: "someone-else" }), RESOURCE)).rejects.toBeInstanceOf(
      InvalidTokenError,
    );
  });

  it("refuses an HS256 token made with the public key as the secret", async () => {
    const jwk = keys.jwks().keys[0];
    const secret = new TextEncoder().encode(JSON.stringify(jwk));
    const now = Math.floor(clock() / 1000);
    const token = await new SignJWT({ client_id: "atc_x", scope: "mcp:read", gid: GRANT_ID })
      .setProtectedHeader({ alg: "HS256", typ: "at+jwt", kid: keys.current().kid })
      .setIssuer(PUBLIC_URL)
      .setAudience(RESOURCE)
      .setSubject(ALICE.id)
      .setJti("j")
      .setIssuedAt(now)
      .setExpirationTime(now + 60)
      .sign(secret);
    await expect(tokens.verify(token, RESOURCE)).rejects.toBeInstanceOf(InvalidTokenError);
  });

  it("refuses a token from another issuer, and does not take it for an Atrium token", async () => {
    const elsewhere = new AccessTokens({
      keys,
      grants,
      publicUrl: () => "https://other.example",
      clock,
    });
    const { token } = await elsewhere.issue({
      sub: ALICE.id,
      clientId: "atc_x",
      scopes: ["mcp:read"],
      audience: RESOURCE,
      grantId: GRANT_ID,
      lifetime: accessTokenLifetime(clock(), ACCESS_TTL_SECONDS),
    });
    expect(tokens.isAtriumToken(token)).toBe(false);
    await expect(tokens.verify(token, RESOURCE)).rejects.toBeInstanceOf(InvalidTokenError);
  });

  it("a token already verified once is still refused elsewhere, after expiry and after revocation", async () => {
    const first = await issue();
    await expect(tokens.verify(first.token, RESOURCE)).resolves.toBeDefined();
    await expect(tokens.verify(first.token, OTHER_RESOURCE)).rejects.toBeInstanceOf(InvalidTokenError);
    clock.advance((ACCESS_TTL_SECONDS + 61) * 1000);
    await expect(tokens.verify(first.token, RESOURCE)).rejects.toBeInstanceOf(InvalidTokenError);

    const second = await issue();
    await expect(tokens.verify(second.token, RESOURCE)).resolves.toBeDefined();
    await grants.revoke(GRANT_ID);
    await expect(tokens.verify(second.token, RESOURCE)).rejects.toBeInstanceOf(InvalidTokenError);
  });

  it("refuses a token whose grant has been revoked", async () => {
    const { token } = await issue();
    await grants.revoke(GRANT_ID);
    await expect(tokens.verify(token, RESOURCE)).rejects.toBeInstanceOf(InvalidTokenError);
  });

  it("keeps verifying tokens signed before a key rotation", async () => {
    const { token } = await issue();
    await keys.rotate();
    await expect(tokens.verify(token, RESOURCE)).resolves.toMatchObject({ sub: ALICE.id });
    const { token: next } = await issue();
    expect(decodeProtectedHeader(next).kid).toBe(keys.current().kid);
  });

  it("refuses a token whose typ is not at+jwt (an ID token, say)", async () => {
    const key = keys.current();
    const now = Math.floor(clock() / 1000);
    const token = await new SignJWT({ client_id: "atc_x", scope: "mcp:read", gid: GRANT_ID })
      .setProtectedHeader({ alg: "ES256", typ: "JWT", kid: key.kid })
      .setIssuer(PUBLIC_URL)
      .setAudience(RESOURCE)
      .setSubject(ALICE.id)
      .setJti("j")
      .setIssuedAt(now)
      .setExpirationTime(now + 60)
      .sign(key.privateKey);
    await expect(tokens.verify(token, RESOURCE)).rejects.toBeInstanceOf(InvalidTokenError);
  });

  it("isAtriumToken reads the issuer without verifying, and is false for anything not a JWT", async () => {
    const { token } = await issue();
    expect(tokens.isAtriumToken(token)).toBe(true);
    expect(tokens.isAtriumToken(await forged())).toBe(true);
    expect(tokens.isAtriumToken("not-a-jwt")).toBe(false);
    expect(tokens.isAtriumToken("")).toBe(false);
  });

  it("inspect gives the claims of our own token whatever its audience or expiry, and nothing for a forgery", async () => {
    const { token } = await issue(OTHER_RESOURCE);
    clock.advance(ACCESS_TTL_SECONDS * 2000);
    expect(await tokens.inspect(token)).toMatchObject({ grantId: GRANT_ID, audience: OTHER_RESOURCE });
    expect(await tokens.inspect(await forged())).toBeUndefined();
    expect(await tokens.inspect("garbage")).toBeUndefined();
  });
});
