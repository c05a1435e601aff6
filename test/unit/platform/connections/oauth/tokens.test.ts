import { describe, expect, it } from "vitest";
import type { OAuthClient } from "../../../../../src/platform/connections/oauth/client-identity.ts";
import {
  AuthorizationRefused,
  type AuthorizationTarget,
} from "../../../../../src/platform/connections/oauth/discovery.ts";
import {
  beginAuthorization,
  MAX_AUTHORIZATION_URL_CHARS,
} from "../../../../../src/platform/connections/oauth/tokens.ts";

const CLIENT = { info: { client_id: "atrium" }, how: "registered" } as OAuthClient;

function targetWith(authorizationEndpoint: string): AuthorizationTarget {
  return {
    serverUrl: "https://mcp.example/mcp",
    resource: "https://mcp.example/mcp",
    issuer: "https://as.example",
    metadata: {
      issuer: "https://as.example",
      authorization_endpoint: authorizationEndpoint,
      token_endpoint: "https://as.example/token",
      response_types_supported: ["code"],
      code_challenge_methods_supported: ["S256"],
    },
  };
}

const request = {
  redirectUri: "https://atrium.example/v1/connections/oauth/callback",
  state: "s".repeat(43),
};

describe("beginAuthorization", () => {
  it("refuses a sign-in URL longer than a flow keeps, saying whose it is", async () => {
    const long = targetWith(`https://as.example/authorize/${"a".repeat(MAX_AUTHORIZATION_URL_CHARS)}`);
    const refused = await beginAuthorization(long, CLIENT, request).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AuthorizationRefused);
    expect((refused as Error).message).toMatch(/more than the 32768 Atrium keeps for a sign-in/);
  });

  it("builds one of 50 long scopes", async () => {
    const scope = Array.from({ length: 50 }, (_, i) => `${i}`.padEnd(200, "s")).join(" ");
    const begun = await beginAuthorization(targetWith("https://as.example/authorize"), CLIENT, {
      ...request,
      scope,
    });
    expect(begun.authorizationUrl.searchParams.get("scope")).toBe(scope);
  });
});
