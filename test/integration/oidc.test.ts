import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateKeyPair, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BootError } from "../../src/errors.ts";
import { derivePrincipalId } from "../../src/identity/principal.ts";
import { principalFrom } from "../../src/identity/providers/oidc.ts";
import { parseInstance } from "../../src/instance/load.ts";
import type { OidcAuth } from "../../src/instance/schema.ts";
import { createLogger } from "../../src/log.ts";
import { type RunningAtrium, startAtrium } from "../../src/server.ts";
import { startOidcIssuer, TEST_AUDIENCE, TEST_CLIENT_ID, TEST_SESSION } from "../helpers/oidc-issuer.ts";

let issuer: Awaited<ReturnType<typeof startOidcIssuer>>;
let atrium: RunningAtrium;
let dir: string;

function call(path: string, token?: string): Promise<Response> {
  return fetch(`${atrium.url}${path}`, {
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  });
}

beforeAll(async () => {
  issuer = await startOidcIssuer();
  dir = await mkdtemp(join(tmpdir(), "atrium-oidc-"));
  const config = parseInstance(
    {
      auth: { adapter: "oidc", issuer: issuer.issuer, clientId: "atrium", audience: TEST_AUDIENCE },
      session: TEST_SESSION,
      storage: { root: "./data" },
      http: { host: "127.0.0.1", port: 0, publicUrl: "http://127.0.0.1:0" },
    },
    { source: "test", baseDir: dir },
  );
  atrium = await startAtrium(config, { log: createLogger("silent") });
});

afterAll(async () => {
  await atrium?.close();
  await issuer?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("the oidc identity provider", () => {
  it("accepts a bearer token from the provider and derives the principal from (issuer, subject)", async () => {
    const response = await call("/v1/bootstrap", await issuer.token());
    expect(response.status).toBe(200);
    const body = (await response.json()) as { principal: { id: string; displayName: string } };
    expect(body.principal.displayName).toBe(TEST_CLIENT_ID);
    expect(body.principal.id).toBe(derivePrincipalId(issuer.issuer, TEST_CLIENT_ID));
  });

  it("a request without a credential is 401, never a default person", async () => {
    const response = await call("/v1/bootstrap");
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toMatch(/^Bearer/);
  });

  it("refuses a tampered, unsigned, foreign-key or foreign-issuer token", async () => {
    const good = await issuer.token();
    const [header, payload, signature] = good.split(".") as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString()) as Record<string, unknown>;
    const forgedPayload = Buffer.from(JSON.stringify({ ...claims, sub: "someone-else" })).toString(
      "base64url",
    );
    const noneHeader = Buffer.from(JSON.stringify({ alg: "none", typ: "at+jwt" })).toString("base64url");
    const { privateKey } = await generateKeyPair("ES256");
    const kid = JSON.parse(Buffer.from(header, "base64url").toString()).kid as string;
    const foreignKey = await new SignJWT(claims).setProtectedHeader({ alg: "ES256", kid }).sign(privateKey);
    const foreignIssuer = await new SignJWT({ ...claims, iss: "http://127.0.0.1:9/evil" })
      .setProtectedHeader({ alg: "ES256", kid })
      .sign(privateKey);
    for (const [label, token] of [
      ["payload changed", `${header}.${forgedPayload}.${signature}`],
      ["alg none", `${noneHeader}.${payload}.`],
      ["signed by another key", foreignKey],
      ["another issuer", foreignIssuer],
      ["not a JWT", "abc.def"],
    ] as const) {
      expect((await call("/v1/bootstrap", token)).status, label).toBe(401);
    }
  });
});

describe("provider tokens at /mcp/ws_…", () => {
  const listTools = (workspaceId: string, url: string, token: string) =>
    fetch(`${url}/mcp/${workspaceId}`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
  const firstWorkspace = async (url: string, token: string) => {
    const response = await fetch(`${url}/v1/bootstrap`, { headers: { authorization: `Bearer ${token}` } });
    return ((await response.json()) as { workspaces: Array<{ id: string }> }).workspaces[0]?.id as string;
  };

  it("are refused unless their client is configured as first-party, with the way to authorize instead", async () => {
    const token = await issuer.token();
    const workspaceId = await firstWorkspace(atrium.url, token);
    const refused = await listTools(workspaceId, atrium.url, token);
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toContain(
      `resource_metadata="${atrium.url}/.well-known/oauth-protected-resource/mcp/${workspaceId}"`,
    );
  });

  it("are accepted from a client listed in auth.firstPartyClients", async () => {
    const firstPartyDir = await mkdtemp(join(tmpdir(), "atrium-oidc-1p-"));
    const firstParty = await startAtrium(
      parseInstance(
        {
          auth: {
            adapter: "oidc",
            issuer: issuer.issuer,
            clientId: "atrium",
            audience: TEST_AUDIENCE,
            firstPartyClients: [TEST_CLIENT_ID],
          },
          session: TEST_SESSION,
          storage: { root: "./data" },
          http: { host: "127.0.0.1", port: 0, publicUrl: "http://127.0.0.1:0" },
        },
        { source: "test", baseDir: firstPartyDir },
      ),
      { log: createLogger("silent") },
    );
    try {
      const token = await issuer.token();
      const workspaceId = await firstWorkspace(firstParty.url, token);
      expect((await listTools(workspaceId, firstParty.url, token)).status).toBe(200);
    } finally {
      await firstParty.close();
      await rm(firstPartyDir, { recursive: true, force: true });
    }
  });
});

describe("oidc configuration", () => {
  const http = { host: "127.0.0.1", port: 0, publicUrl: "http://127.0.0.1:0" };
  const parse = (auth: Record<string, unknown>) =>
    parseInstance(
      { auth, session: TEST_SESSION, storage: { root: "./data" }, http },
      { source: "instance.json", baseDir: "/tmp" },
    );

  it("oidc needs an issuer and a client id, and dev takes neither", () => {
    expect(() => parse({ adapter: "oidc", clientId: "x" })).toThrow(/missing field "issuer"/);
    expect(() => parse({ adapter: "oidc", issuer: "https://id.example" })).toThrow(
      /missing field "clientId"/,
    );
    expect(() => parse({ adapter: "dev", issuer: "https://id.example" })).toThrow(BootError);
    const auth = parse({ adapter: "oidc", issuer: "https://id.example", clientId: "x" }).auth as OidcAuth;
    expect(auth).toMatchObject({ audience: "x", claims: { subject: "sub", name: "name", email: "email" } });
  });

  it("maps claims to a principal, with org admin only for a listed value", () => {
    const auth = parse({
      adapter: "oidc",
      issuer: "https://id.example",
      clientId: "x",
      claims: {
        subject: "oid",
        name: "preferred_username",
        orgRole: "groups",
        orgAdminValues: ["atrium-admins"],
      },
    }).auth as OidcAuth;
    const admin = principalFrom(
      { oid: "u1", preferred_username: "Ada", groups: ["staff", "atrium-admins"] },
      auth,
    );
    expect(admin).toEqual({
      id: derivePrincipalId("https://id.example", "u1"),
      displayName: "Ada",
      email: null,
      orgRole: "admin",
      unstated: ["email"],
    });
    // An unverified address names no one: it could be added to a workspace by email.
    expect(
      principalFrom({ oid: "u3", email: "boss@example.com", email_verified: false }, auth).email,
    ).toBeNull();
    expect(principalFrom({ oid: "u3", email: "boss@example.com", email_verified: true }, auth).email).toBe(
      "boss@example.com",
    );
    expect(principalFrom({ oid: "u2", groups: "staff" }, auth)).toMatchObject({
      displayName: "u2",
      orgRole: "member",
    });
    expect(() => principalFrom({ sub: "no-oid" }, auth)).toThrow(/"oid"/);
  });

  it('keeps an email only when email_verified is true, "true" or absent (the same for a sign-in\'s ID token)', () => {
    const auth = parse({ adapter: "oidc", issuer: "https://id.example", clientId: "x" }).auth as OidcAuth;
    const email = (email_verified: unknown) =>
      principalFrom(
        { sub: "u4", email: "boss@example.com", ...(email_verified === undefined ? {} : { email_verified }) },
        auth,
      ).email;
    for (const verified of [undefined, true, "true"])
      expect(email(verified), String(verified)).toBe("boss@example.com");
    for (const unverified of [false, "false", "FALSE", "", 0, 1, null, "yes"]) {
      expect(email(unverified), JSON.stringify(unverified)).toBeNull();
    }
  });
});
