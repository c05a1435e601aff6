import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { beforeAll, describe, expect, it, type TestContext } from "vitest";
import { startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";

// docs/configuration.md (oidc): a token that fails verification is 401, an unreachable provider
// 503. A token that cannot pass whatever the provider's keys say is refused before they are
// fetched, so it is 401 while the provider is down too, and costs the provider nothing; one that
// might pass waits for the keys, and is 503 while they cannot be had.

const CLIENT_ID = "atrium";
process.env.ATRIUM_TEST_PROVIDER_DOWN_SECRET = "s".repeat(48);

interface DownProvider {
  issuer: string;
  atrium: TestAtrium;
  /** How many times the provider was asked for its discovery document. */
  discoveryFetches(): number;
}

/**
 * A provider on 127.0.0.1 that is up as a host but down as a provider: every path answers 503,
 * but for discovery when `discoveryAnswers` (then only its key set is down), and an Atrium using it.
 */
async function downProvider(discoveryAnswers: boolean, onFinished: (fn: () => Promise<void>) => void) {
  let discoveryFetches = 0;
  let issuer = "";
  const provider = createServer((request, response) => {
    if (request.url !== "/.well-known/openid-configuration" || !discoveryAnswers) {
      if (request.url === "/.well-known/openid-configuration") discoveryFetches++;
      return response.writeHead(503).end();
    }
    discoveryFetches++;
    response.writeHead(200, { "content-type": "application/json" }).end(
      JSON.stringify({
        issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`,
      }),
    );
  });
  await new Promise<void>((resolve) => provider.listen(0, "127.0.0.1", resolve));
  issuer = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`;
  const atrium = await startTestAtrium({
    auth: { adapter: "oidc", issuer, clientId: CLIENT_ID },
    session: { secret: { env: "ATRIUM_TEST_PROVIDER_DOWN_SECRET" } },
  });
  onFinished(async () => {
    await atrium.stop();
    provider.closeAllConnections();
    await new Promise<void>((resolve) => provider.close(() => resolve()));
  });
  return { issuer, atrium, discoveryFetches: () => discoveryFetches } satisfies DownProvider;
}

function part(value: object): string {
  return Buffer.from(JSON.stringify(value)).toString("base64url");
}

/** A JWT shaped as given, signed by nobody: only its header and claims matter here. */
function token(header: object, claims: object): string {
  return `${part(header)}.${part(claims)}.${Buffer.from("not a signature").toString("base64url")}`;
}

const HEADER = { alg: "RS256", kid: "k1", typ: "at+jwt" };
const inAnHour = () => Math.floor(Date.now() / 1000) + 3600;
const claimsFor = (issuer: string) => ({ iss: issuer, aud: CLIENT_ID, sub: "ada", exp: inAnHour() });

function bootstrap(down: DownProvider, bearer: string): Promise<Response> {
  return fetch(`${down.atrium.url}/v1/bootstrap`, { headers: { authorization: `Bearer ${bearer}` } });
}

async function expectProviderUnavailable(answer: Response): Promise<void> {
  expect(answer.status).toBe(503);
  expect(((await answer.json()) as { error: { code: string } }).error.code).toBe(
    "identity_provider_unavailable",
  );
}

describe("while the identity provider is down", () => {
  let down: DownProvider;
  const finish: Array<() => Promise<void>> = [];
  beforeAll(async () => {
    down = await downProvider(false, (fn) => finish.push(fn));
    return async () => {
      for (const fn of finish) await fn();
    };
  });
  const claims = () => claimsFor(down.issuer);

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
    const before = down.discoveryFetches();
    expect((await bootstrap(down, make())).status).toBe(401);
    expect(down.discoveryFetches()).toBe(before);
  });

  it("at an MCP URL, a value that is not a JWT is 401 with the challenge", async () => {
    const answer = await fetch(`${down.atrium.url}/mcp/ws_0123456789abcdef`, {
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
    const before = down.discoveryFetches();
    await expectProviderUnavailable(await bootstrap(down, token(HEADER, claims())));
    expect(down.discoveryFetches()).toBe(before + 1);
  });
});

it("a JWT that could pass is 503 when the provider's discovery answers but its key set does not", async ({
  onTestFinished,
}: TestContext) => {
  const down = await downProvider(true, onTestFinished);
  await expectProviderUnavailable(await bootstrap(down, token(HEADER, claimsFor(down.issuer))));
});
