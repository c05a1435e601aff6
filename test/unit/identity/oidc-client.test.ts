import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from "jose";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { DISCOVERY_RETRY_MS, OidcClient, SignInFailed } from "../../../src/identity/oidc-client.ts";
import type { ClientAuthMethod, OidcAuth } from "../../../src/instance/schema.ts";

// A hand-made provider on 127.0.0.1: a discovery document, a JWKS with one ES256 key, and a
// token endpoint that records what it was sent and answers with whatever the test set.

const CLIENT_ID = "atrium";
const NONCE = "the-nonce-this-sign-in-sent";

let server: ReturnType<typeof createServer>;
let issuer: string;
let privateKey: CryptoKey;
let discovery: Record<string, unknown>;
let tokenAnswer: { status: number; body: unknown };
let discoveryFetches: number;
let keyFetchesRefused: number;
let tokenRequests: Array<{ headers: IncomingMessage["headers"]; body: URLSearchParams }>;

function auth(overrides: Partial<OidcAuth> = {}): OidcAuth {
  return {
    adapter: "oidc",
    issuer,
    clientId: CLIENT_ID,
    clientSecret: "s3cret:with/odd chars",
    clientAuthMethod: "client_secret_basic",
    scopes: ["openid", "profile"],
    audience: CLIENT_ID,
    claims: { subject: "sub", name: "name", email: "email", orgAdminValues: [] },
    firstPartyClients: [],
    ...overrides,
  };
}

async function idToken(
  claims: JWTPayload = {},
  header: { alg: string; kid?: string } = { alg: "ES256", kid: "k1" },
  key: CryptoKey | Uint8Array = privateKey,
): Promise<string> {
  return new SignJWT({ sub: "u1", nonce: NONCE, ...claims })
    .setProtectedHeader(header)
    .setIssuer(typeof claims.iss === "string" ? claims.iss : issuer)
    .setAudience(claims.aud ?? CLIENT_ID)
    .setIssuedAt()
    .setExpirationTime(typeof claims.exp === "number" ? claims.exp : "5m")
    .sign(key);
}

beforeAll(async () => {
  const pair = await generateKeyPair("ES256", { extractable: true });
  privateKey = pair.privateKey;
  const publicJwk = { ...(await exportJWK(pair.publicKey)), kid: "k1", alg: "ES256", use: "sig" };
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const json = (status: number, body: unknown) => {
        response.writeHead(status, { "content-type": "application/json" });
        response.end(JSON.stringify(body));
      };
      if (request.url === "/.well-known/openid-configuration") {
        discoveryFetches++;
        return json(200, discovery);
      }
      if (request.url === "/jwks") return json(200, { keys: [publicJwk] });
      if (request.url === "/jwks-down") {
        keyFetchesRefused++;
        return json(503, {});
      }
      if (request.url === "/jwks-maintenance") {
        keyFetchesRefused++;
        response.writeHead(200, { "content-type": "text/html" });
        return response.end("<html><body>Down for maintenance</body></html>");
      }
      if (request.url === "/token" && request.method === "POST") {
        tokenRequests.push({
          headers: request.headers,
          body: new URLSearchParams(Buffer.concat(chunks).toString()),
        });
        return json(tokenAnswer.status, tokenAnswer.body);
      }
      json(404, {});
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

beforeEach(() => {
  discovery = {
    issuer,
    authorization_endpoint: `${issuer}/authorize`,
    token_endpoint: `${issuer}/token`,
    jwks_uri: `${issuer}/jwks`,
  };
  tokenAnswer = { status: 200, body: { id_token: "x.y.z", access_token: "at", token_type: "Bearer" } };
  tokenRequests = [];
  discoveryFetches = 0;
  keyFetchesRefused = 0;
});

async function refusal(promise: Promise<unknown>): Promise<SignInFailed> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof SignInFailed)) throw new Error(`expected SignInFailed, got ${String(error)}`);
  return error;
}

describe("ID token verification", () => {
  it("accepts a token from the issuer, for this client, with this sign-in's nonce", async () => {
    const payload = await new OidcClient(auth()).verifyIdToken(await idToken({ name: "Ada" }), NONCE);
    expect(payload).toMatchObject({ sub: "u1", name: "Ada" });
  });

  it("refuses a wrong nonce, a missing nonce, a wrong audience, another issuer, an expired token", async () => {
    const client = new OidcClient(auth());
    const cases: Array<[string, Promise<string>]> = [
      ["wrong nonce", idToken({ nonce: "another" })],
      ["no nonce", idToken({ nonce: undefined })],
      ["wrong audience", idToken({ aud: "someone-else" })],
      ["another issuer", idToken({ iss: "http://127.0.0.1:9" })],
      ["expired beyond the tolerance", idToken({ exp: Math.floor(Date.now() / 1000) - 120 })],
    ];
    for (const [label, token] of cases) {
      expect((await refusal(client.verifyIdToken(await token, NONCE))).reason, label).toBe(
        "id_token_invalid",
      );
    }
  });

  it("refuses alg none, an HMAC token keyed with the public key's bytes, and a key not in the JWKS", async () => {
    const client = new OidcClient(auth());
    const good = await idToken();
    const [, payload] = good.split(".") as [string, string];
    const none = `${Buffer.from(JSON.stringify({ alg: "none" })).toString("base64url")}.${payload}.`;
    const hmac = await idToken(
      {},
      { alg: "HS256", kid: "k1" },
      new TextEncoder().encode("k1-public-key-bytes"),
    );
    const foreign = await idToken(
      {},
      { alg: "ES256", kid: "k1" },
      (await generateKeyPair("ES256")).privateKey,
    );
    for (const [label, token] of [
      ["alg none", none],
      ["HS256", hmac],
      ["foreign key", foreign],
    ] as const) {
      expect((await refusal(client.verifyIdToken(token, NONCE))).reason, label).toBe("id_token_invalid");
    }
  });

  it("a token for several audiences must name this client as its authorized party", async () => {
    const client = new OidcClient(auth());
    const aud = [CLIENT_ID, "another-api"];
    await expect(client.verifyIdToken(await idToken({ aud, azp: CLIENT_ID }), NONCE)).resolves.toBeTruthy();
    expect((await refusal(client.verifyIdToken(await idToken({ aud }), NONCE))).reason).toBe(
      "id_token_invalid",
    );
    expect(
      (await refusal(client.verifyIdToken(await idToken({ aud, azp: "another-api" }), NONCE))).reason,
    ).toBe("id_token_invalid");
  });
});

describe("discovery", () => {
  it("refuses a document that names another issuer", async () => {
    discovery.issuer = "https://evil.example";
    expect((await refusal(new OidcClient(auth()).metadata())).reason).toBe("discovery_invalid");
  });

  it("caches the document, and a failure only briefly", async () => {
    discovery.issuer = "https://evil.example";
    let nowMs = Date.now();
    const client = new OidcClient(auth(), () => nowMs);
    await refusal(client.metadata());
    discovery.issuer = issuer;
    nowMs += DISCOVERY_RETRY_MS;
    const first = await client.metadata();
    discovery.token_endpoint = `${issuer}/moved`;
    expect((await client.metadata()).tokenEndpoint).toBe(first.tokenEndpoint);
  });

  it("answers with a failure for DISCOVERY_RETRY_MS, fetching once however often it is asked", async () => {
    discovery.issuer = "https://evil.example";
    let nowMs = Date.now();
    const client = new OidcClient(auth(), () => nowMs);
    const asked = await Promise.all([1, 2, 3].map(() => refusal(client.metadata())));
    expect(asked.map((failure) => failure.reason)).toEqual(Array(3).fill("discovery_invalid"));
    discovery.issuer = issuer;
    nowMs += DISCOVERY_RETRY_MS - 1;
    await refusal(client.metadata());
    expect(discoveryFetches).toBe(1);
    nowMs += 1;
    expect((await client.metadata()).issuer).toBe(issuer);
    expect(discoveryFetches).toBe(2);
  });

  it("a failure is not remembered across a clock stepped back behind it (ADR 0168)", async () => {
    discovery.issuer = "https://evil.example";
    let nowMs = Date.now();
    const client = new OidcClient(auth(), () => nowMs);
    await refusal(client.metadata());
    discovery.issuer = issuer; // the provider recovers
    nowMs -= 60 * 60 * 1000; // NTP steps the wall clock back an hour
    // Before, the failure was answered for the hour (every sign-in failed), not for 5 s.
    expect((await client.metadata()).issuer).toBe(issuer);
    expect(discoveryFetches).toBe(2);
  });

  it("builds the authorization URL from discovery with PKCE S256, state, nonce and the scopes", async () => {
    const url = new URL(
      await new OidcClient(auth()).authorizationUrl({
        redirectUri: "http://127.0.0.1:1/auth/callback",
        state: "st",
        nonce: "no",
        codeChallenge: "ch",
      }),
    );
    expect(url.origin + url.pathname).toBe(`${issuer}/authorize`);
    expect(Object.fromEntries(url.searchParams)).toEqual({
      response_type: "code",
      client_id: CLIENT_ID,
      redirect_uri: "http://127.0.0.1:1/auth/callback",
      scope: "openid profile",
      state: "st",
      nonce: "no",
      code_challenge: "ch",
      code_challenge_method: "S256",
    });
  });
});

describe("the key set", () => {
  it("a key set that cannot be fetched is the provider unavailable, asked again only after DISCOVERY_RETRY_MS", async () => {
    discovery.jwks_uri = `${issuer}/jwks-down`;
    let nowMs = Date.now();
    const client = new OidcClient(auth(), () => nowMs);
    const token = await idToken();
    for (let attempt = 0; attempt < 3; attempt++) {
      expect((await refusal(client.verifyIdToken(token, NONCE))).reason).toBe("provider_unavailable");
    }
    expect(keyFetchesRefused).toBe(1);
    nowMs += DISCOVERY_RETRY_MS;
    expect((await refusal(client.verifyIdToken(token, NONCE))).reason).toBe("provider_unavailable");
    expect(keyFetchesRefused).toBe(2);
  });

  it("a key set that could not be fetched is asked again once the clock is stepped back behind the failure (ADR 0168)", async () => {
    discovery.jwks_uri = `${issuer}/jwks-down`;
    let nowMs = Date.now();
    const client = new OidcClient(auth(), () => nowMs);
    const token = await idToken();
    expect((await refusal(client.verifyIdToken(token, NONCE))).reason).toBe("provider_unavailable");
    expect(keyFetchesRefused).toBe(1);
    nowMs -= 60 * 60 * 1000; // NTP steps the wall clock back an hour
    // Before, the failure was answered for the hour without asking the provider.
    expect((await refusal(client.verifyIdToken(token, NONCE))).reason).toBe("provider_unavailable");
    expect(keyFetchesRefused).toBe(2);
  });

  it("a 200 that is no key set (a maintenance page) is the provider unavailable too, fetched once", async () => {
    discovery.jwks_uri = `${issuer}/jwks-maintenance`;
    const client = new OidcClient(auth());
    const token = await idToken();
    for (let attempt = 0; attempt < 3; attempt++) {
      expect((await refusal(client.verifyIdToken(token, NONCE))).reason).toBe("provider_unavailable");
    }
    expect(keyFetchesRefused).toBe(1);
  });
});

describe("the code exchange", () => {
  const exchange = (method: ClientAuthMethod) =>
    new OidcClient(
      auth({
        clientAuthMethod: method,
        clientSecret: method === "none" ? undefined : "s3cret:with/odd chars",
      }),
    ).exchangeCode("the-code", "http://127.0.0.1:1/auth/callback", "the-verifier");

  it("client_secret_basic sends the form-encoded id and secret in Basic, never in the body", async () => {
    await exchange("client_secret_basic");
    const [sent] = tokenRequests;
    const basic = Buffer.from(`${CLIENT_ID}:s3cret%3Awith%2Fodd+chars`).toString("base64");
    expect(sent?.headers.authorization).toBe(`Basic ${basic}`);
    expect(Object.fromEntries(sent?.body ?? [])).toEqual({
      grant_type: "authorization_code",
      code: "the-code",
      redirect_uri: "http://127.0.0.1:1/auth/callback",
      code_verifier: "the-verifier",
    });
  });

  it("client_secret_post sends the id and secret in the body", async () => {
    await exchange("client_secret_post");
    const [sent] = tokenRequests;
    expect(sent?.headers.authorization).toBeUndefined();
    expect(sent?.body.get("client_id")).toBe(CLIENT_ID);
    expect(sent?.body.get("client_secret")).toBe("s3cret:with/odd chars");
    expect(sent?.body.get("code_verifier")).toBe("the-verifier");
  });

  it("none (a public client) sends only the client id", async () => {
    await exchange("none");
    const [sent] = tokenRequests;
    expect(sent?.headers.authorization).toBeUndefined();
    expect(sent?.body.get("client_id")).toBe(CLIENT_ID);
    expect(sent?.body.has("client_secret")).toBe(false);
    expect(sent?.body.get("code_verifier")).toBe("the-verifier");
  });

  it("returns the ID token, and a refusal or an answer without one is a failed exchange", async () => {
    expect(await exchange("client_secret_basic")).toEqual({ idToken: "x.y.z", accessToken: "at" });
    tokenAnswer = { status: 400, body: { error: "invalid_grant", error_description: "code reused" } };
    const refused = await refusal(exchange("client_secret_basic"));
    expect(refused.reason).toBe("token_exchange_failed");
    expect(refused.message).toContain("invalid_grant");
    tokenAnswer = { status: 200, body: { access_token: "at", token_type: "Bearer" } };
    expect((await refusal(exchange("client_secret_basic"))).reason).toBe("token_exchange_failed");
  });
});

describe("the claims a sign-in maps", () => {
  const roleAuth = () =>
    auth({
      audience: "https://atrium.test/api",
      claims: { subject: "sub", name: "name", email: "email", orgRole: "role", orgAdminValues: ["admin"] },
    });
  const accessToken = (claims: JWTPayload, key: CryptoKey = privateKey) =>
    idToken(
      { nonce: undefined, aud: "https://atrium.test/api", ...claims },
      { alg: "ES256", kid: "k1" },
      key,
    );

  it("takes the org role from the access token when the ID token has none", async () => {
    const claims = await new OidcClient(roleAuth()).signInClaims(
      { idToken: await idToken({ name: "Ada" }), accessToken: await accessToken({ role: "admin" }) },
      NONCE,
    );
    expect(claims).toMatchObject({ sub: "u1", name: "Ada", role: "admin" });
  });

  it("the ID token's own role wins, and the access token lends nothing but the role", async () => {
    const claims = await new OidcClient(roleAuth()).signInClaims(
      {
        idToken: await idToken({ role: "member" }),
        accessToken: await accessToken({ role: "admin", name: "Someone Else" }),
      },
      NONCE,
    );
    expect(claims).toMatchObject({ role: "member" });
    expect(claims.name).toBeUndefined();
  });

  it("takes no role from the access token when a WorkOS organization names where roles come from", async () => {
    const workos = {
      ...roleAuth(),
      workosOrganization: { organizationId: "org_01ATRIUM", apiUrl: "https://api.workos.test" },
    };
    const claims = await new OidcClient(workos).signInClaims(
      { idToken: await idToken(), accessToken: await accessToken({ role: "admin", org_id: "org_01OTHER" }) },
      NONCE,
    );
    expect(claims.role).toBeUndefined();
  });

  it("ignores an access token about someone else, signed by another key, for another audience, or opaque", async () => {
    const client = new OidcClient(roleAuth());
    const foreignKey = (await generateKeyPair("ES256")).privateKey;
    for (const [label, token] of [
      ["another subject", await accessToken({ role: "admin", sub: "u2" })],
      ["another key", await accessToken({ role: "admin" }, foreignKey)],
      ["another audience", await accessToken({ role: "admin", aud: "https://other.example" })],
      ["opaque", "an-opaque-access-token"],
    ] as const) {
      const claims = await client.signInClaims({ idToken: await idToken(), accessToken: token }, NONCE);
      expect(claims.role, label).toBeUndefined();
    }
  });
});
