import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair } from "jose";
import Provider from "oidc-provider";

export const TEST_CLIENT_ID = "atrium-tests";
const TEST_CLIENT_SECRET = "atrium-tests-secret";
export const TEST_AUDIENCE = "https://atrium.test/api";

/** instance.json's `session` for instances with a real provider, which require a secret. */
process.env.ATRIUM_TEST_SESSION_SECRET ??= "test-session-secret-of-at-least-32-bytes-long";
export const TEST_SESSION = { secret: { env: "ATRIUM_TEST_SESSION_SECRET" } };

/**
 * A real OpenID provider (oidc-provider) on 127.0.0.1 that issues ES256 JWT access tokens
 * for TEST_AUDIENCE through the client-credentials grant.
 */
export async function startOidcIssuer(): Promise<{
  issuer: string;
  token(): Promise<string>;
  close(): Promise<void>;
}> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { privateKey } = await generateKeyPair("ES256", { extractable: true });
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: TEST_CLIENT_ID,
        client_secret: TEST_CLIENT_SECRET,
        grant_types: ["client_credentials"],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: "client_secret_basic",
        id_token_signed_response_alg: "ES256",
      },
    ],
    jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: "test-es256", alg: "ES256", use: "sig" }] },
    scopes: ["api"],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => TEST_AUDIENCE,
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({
          scope: "api",
          audience: TEST_AUDIENCE,
          accessTokenTTL: 300,
          accessTokenFormat: "jwt",
          jwt: { sign: { alg: "ES256" } },
        }),
      },
    },
  });
  server.on("request", provider.callback());
  return {
    issuer,
    async token() {
      const response = await fetch(`${issuer}/token`, {
        method: "POST",
        headers: {
          authorization: `Basic ${Buffer.from(`${TEST_CLIENT_ID}:${TEST_CLIENT_SECRET}`).toString("base64")}`,
          "content-type": "application/x-www-form-urlencoded",
        },
        body: new URLSearchParams({
          grant_type: "client_credentials",
          scope: "api",
          resource: TEST_AUDIENCE,
        }),
      });
      const body = (await response.json()) as { access_token?: string };
      if (!body.access_token) throw new Error(`the test issuer gave no token: ${JSON.stringify(body)}`);
      return body.access_token;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
