import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Hono } from "hono";
import { createLocalJWKSet, exportJWK, generateKeyPair, type JWTPayload, SignJWT } from "jose";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { errorReply } from "../../../../src/http/error-response.ts";
import { authenticateRest } from "../../../../src/http/middleware/authenticate.ts";
import type { OidcClient } from "../../../../src/identity/oidc-client.ts";
import { derivePrincipalId, type Principal } from "../../../../src/identity/principal.ts";
import { createOidcProvider } from "../../../../src/identity/providers/oidc.ts";
import { UserDirectory } from "../../../../src/identity/users.ts";
import type { OidcAuth } from "../../../../src/instance/schema.ts";
import { createLogger } from "../../../../src/log.ts";
import { StorageLayout } from "../../../../src/storage/paths.ts";
import type { AppEnv } from "../../../../src/web/app-env.ts";

// A bearer token's org role holds for its own request and is never recorded; a part a token
// leaves out is what the directory holds (ADR 0071).

const ISSUER = "https://id.example";
const AUDIENCE = "https://atrium.example/api";
const auth: OidcAuth = {
  adapter: "oidc",
  issuer: ISSUER,
  clientId: "atrium",
  clientSecret: undefined,
  clientAuthMethod: "none",
  scopes: ["openid"],
  audience: AUDIENCE,
  claims: { subject: "sub", name: "name", email: "email", orgRole: "groups", orgAdminValues: ["admins"] },
  firstPartyClients: [],
};
const ADA = derivePrincipalId(ISSUER, "ada");

let dir: string;
let users: UserDirectory;
let sign: (claims: JWTPayload) => Promise<string>;
let app: Hono<AppEnv>;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "atrium-authenticate-"));
  users = new UserDirectory(new StorageLayout(dir));
  const { privateKey, publicKey } = await generateKeyPair("ES256");
  const keys = createLocalJWKSet({ keys: [{ ...(await exportJWK(publicKey)), kid: "k1", alg: "ES256" }] });
  sign = (claims) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: "ES256", kid: "k1", typ: "at+jwt" })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setExpirationTime("5m")
      .sign(privateKey);
  const client = { auth, keySet: async () => keys } as unknown as OidcClient;
  app = new Hono<AppEnv>();
  app.use(
    "/v1/*",
    authenticateRest({
      provider: createOidcProvider(client),
      sessions: { lookup: async () => ({ kind: "none" }) },
      tokens: { isAtriumToken: () => false, verify: () => Promise.reject(new Error("not used")) },
      users,
      publicUrl: () => "http://127.0.0.1:1",
    }),
  );
  app.get("/v1/me", (c) => c.json(c.get("principal")));
  app.onError((error) => {
    const reply = errorReply(error, createLogger("silent"), undefined);
    return Response.json(reply.body, { status: reply.status });
  });
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function actingAs(claims: JWTPayload): Promise<Principal> {
  const response = await app.request("/v1/me", {
    headers: { authorization: `Bearer ${await sign(claims)}` },
  });
  expect(response.status).toBe(200);
  return (await response.json()) as Principal;
}

describe("a provider bearer token at REST", () => {
  it("acts with the org role it carries for its own request, and never records it", async () => {
    await users.record({ id: ADA, displayName: "Ada", email: "ada@example.com", orgRole: "member" });
    expect(await actingAs({ sub: "ada", groups: ["admins"] })).toMatchObject({ id: ADA, orgRole: "admin" });
    expect((await users.get(ADA))?.orgRole).toBe("member");
  });

  it("records a first-seen person as a member, whatever role their token carries", async () => {
    expect(await actingAs({ sub: "ada", name: "Ada", groups: ["admins"] })).toMatchObject({
      orgRole: "admin",
    });
    expect(await users.get(ADA)).toEqual({ id: ADA, displayName: "Ada", email: null, orgRole: "member" });
  });

  it("does not demote the directory either: a sign-in's admin stays one for the session", async () => {
    await users.record({ id: ADA, displayName: "Ada", email: "ada@example.com", orgRole: "admin" });
    expect(await actingAs({ sub: "ada", groups: ["staff"] })).toMatchObject({ orgRole: "member" });
    expect((await users.get(ADA))?.orgRole).toBe("admin");
  });

  it("acts as the directory holds the person for what the token leaves out", async () => {
    await users.record({ id: ADA, displayName: "Ada", email: "ada@example.com", orgRole: "admin" });
    expect(await actingAs({ sub: "ada" })).toEqual({
      id: ADA,
      displayName: "Ada",
      email: "ada@example.com",
      orgRole: "admin",
    });
  });

  it("records the name and email it states, and acts with them", async () => {
    await users.record({ id: ADA, displayName: "Ada", email: "ada@example.com", orgRole: "member" });
    const stated = { sub: "ada", name: "Ada L.", email: "ada@new.example" };
    expect(await actingAs(stated)).toMatchObject({ displayName: "Ada L.", email: "ada@new.example" });
    expect(await users.get(ADA)).toMatchObject({ displayName: "Ada L.", email: "ada@new.example" });
  });

  it("from a deactivated person is refused before anything it states is recorded", async () => {
    await users.record({ id: ADA, displayName: "Ada", email: "ada@example.com", orgRole: "member" });
    await users.setDeactivated(ADA, true);
    const response = await app.request("/v1/me", {
      headers: { authorization: `Bearer ${await sign({ sub: "ada", name: "Someone else" })}` },
    });
    expect(response.status).toBe(403);
    expect(await users.get(ADA)).toMatchObject({ displayName: "Ada" });
  });
});
