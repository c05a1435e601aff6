import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";

// docs/configuration.md (oidc): a token that fails verification is 401, an unreachable provider
// 503. A token that cannot pass whatever the provider's keys say is refused before they are
// fetched, so it is 401 while the provider is down too, and costs the provider nothing; one that
// might pass waits for the keys, and is 503 while they cannot be had.

const CLIENT_ID = "atrium";
let provider: Server;
let issuer: string;
let discoveryFetches = 0;
let t: TestAtrium;

function part(value: object): string {
  return Buffer.from(JSON.stringify(value)).toString("base64url");
}

/** A JWT shaped as given, signed by nobody: only its header and claims matter here. */
function token(header: object, claims: object): string {
  return `${part(header)}.${part(claims)}.${Buffer.from("not a signature").toString("base64url")}`;
}

const HEADER = { alg: "RS256", kid: "k1", typ: "at+jwt" };
const inAnHour = () => Math.floor(Date.now() / 1000) + 3600;
const claims = () => ({ iss: issuer, aud: CLIENT_ID, sub: "ada", exp: inAnHour() });

function bootstrap(bearer: string): Promise<Response> {
  return fetch(`${t.url}/v1/bootstrap`, { headers: { authorization: `Bearer ${bearer}` } });
}

beforeAll(async () => {
  // The provider is up as a host but down as a provider: its discovery answers 503.
  provider = createServer((request, response) => {
    if (request.url === "/.well-known/openid-configuration") discoveryFetches++;
    response.writeHead(503).end();
  });
  await new Promise<void>((resolve) => provider.listen(0, "127.0.0.1", resolve));
  issuer = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`;
  process.env.ATRIUM_TEST_PROVIDER_DOWN_SECRET = "s".repeat(48);
  t = await startTestAtrium({
    auth: { adapter: "oidc", issuer, clientId: CLIENT_ID },
    session: { secret: { env: "ATRIUM_TEST_PROVIDER_DOWN_SECRET" } },
  });
});

afterAll(async () => {
  await t?.stop();
  provider?.closeAllConnections();
  await new Promise<void>((resolve) => provider?.close(() => resolve()) ?? resolve());
});

describe("while the identity provider is down", () => {
  it.for<[string, () => string]>([
    ["a value that is not a JWT", () => "not-a-jwt"],
    ["an encrypted JWT (five parts)", () => `${token(HEADER, claims())}.e30.e30`],
    ["a header that is not JSON", () => `bm90IGpzb24.${part(claims())}.c2ln`],
    ["a JWT from another issuer", () => token(HEADER, { ...claims(), iss: "https://elsewhere.example/" })],
    ["a JWT for another audience", () => token(HEADER, { ...claims(), aud: "someone-else" })],
    ["a JWT signed with HMAC", () => token({ ...HEADER, alg: "HS256" }, claims())],
    ["an unsigned JWT (alg none)", () => token({ ...HEADER, alg: "none" }, claims())],
    ["a JWT without an expiry", () => token(HEADER, { ...claims(), exp: undefined })],
    ["a JWT expired past the clock tolerance", () => token(HEADER, { ...claims(), exp: inAnHour() - 7200 })],
  ])("%s is 401, and the provider is not asked", async ([, make]) => {
    const before = discoveryFetches;
    const answer = await bootstrap(make());
    expect(answer.status).toBe(401);
    expect(discoveryFetches).toBe(before);
  });

  it("at an MCP URL, a value that is not a JWT is 401 with the challenge", async () => {
    const answer = await fetch(`${t.url}/mcp/ws_0123456789abcdef`, {
      method: "POST",
      headers: {
        authorization: "Bearer not-a-jwt",
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    });
    expect(answer.status).toBe(401);
    expect(answer.headers.get("www-authenticate")).toContain("resource_metadata=");
  });

  it("a JWT that could pass once the keys are known is 503, the provider asked for them", async () => {
    const before = discoveryFetches;
    const answer = await bootstrap(token(HEADER, claims()));
    expect(answer.status).toBe(503);
    expect(((await answer.json()) as { error: { code: string } }).error.code).toBe(
      "identity_provider_unavailable",
    );
    expect(discoveryFetches).toBe(before + 1);
  });
});
