import { createHash, randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair } from "jose";
import Provider from "oidc-provider";

export const TEST_CLIENT_ID = "atrium-tests";
const TEST_CLIENT_SECRET = "atrium-tests-secret";
export const TEST_AUDIENCE = "https://atrium.test/api";
/**
 * A resource indicator whose access tokens' `aud` is the requesting client's own id, as
 * providers issue them for "this application" (and as Atrium's default `auth.audience`,
 * the client id, expects) — the audience an ID token also carries.
 */
export const CLIENT_AUDIENCE_RESOURCE = "urn:atrium-test:client-audience";

/** oidc-provider lifetimes (seconds), set explicitly so the provider does not warn about its defaults. */
export const PROVIDER_TTL = {
  AccessToken: 300,
  AuthorizationCode: 60,
  ClientCredentials: 300,
  Grant: 3600,
  IdToken: 300,
  Interaction: 600,
  Session: 3600,
};

/** instance.json's `session` for instances with a real provider, which require a secret. */
process.env.ATRIUM_TEST_SESSION_SECRET ??= "test-session-secret-of-at-least-32-bytes-long";
export const TEST_SESSION = { secret: { env: "ATRIUM_TEST_SESSION_SECRET" } };

/** The browser sign-in client's secret, named by the `auth.clientSecret` oidcSignInAuth() returns. */
const BROWSER_CLIENT_SECRET = "atrium-browser-client-secret";
process.env.ATRIUM_TEST_OIDC_CLIENT_SECRET ??= BROWSER_CLIENT_SECRET;

/** Logins that start with this are in TEST_ORG_ADMIN_GROUP, like test/helpers/atrium.ts's header users. */
export const TEST_ORG_ADMIN_LOGIN_PREFIX = "orgadmin";
export const TEST_ORG_ADMIN_GROUP = "atrium-admins";

/**
 * Claims a test changes at the provider for one login (an undefined value drops the claim), as an
 * identity provider's admin would: a person taken out of every group, say.
 */
export const accountOverrides = new Map<string, Record<string, unknown>>();

/** The claims the test issuer holds for a login name: any login is a person, named after it. */
export function testAccount(login: string): { sub: string; name: string; email: string; groups: string[] } {
  return {
    sub: login,
    name: `Test ${login}`,
    email: `${login}@example.test`,
    groups: login.startsWith(TEST_ORG_ADMIN_LOGIN_PREFIX) ? ["staff", TEST_ORG_ADMIN_GROUP] : ["staff"],
  };
}

export interface TestIssuer {
  issuer: string;
  /** The client id Atrium signs browsers in with (unique per issuer: registrations share one store). */
  browserClientId: string;
  /** A client-credentials access token for TEST_AUDIENCE (sub = TEST_CLIENT_ID). */
  token(): Promise<string>;
  /**
   * Registers Atrium's browser client (dynamic client registration) with the callback of the
   * instance at `atriumUrl`; call it once Atrium is listening and its port is known.
   */
  registerBrowserClient(
    atriumUrl: string,
    authMethod?: "client_secret_basic" | "client_secret_post" | "none",
  ): Promise<void>;
  /**
   * A real sign-in as `login` for the browser client (registered with registerBrowserClient
   * for `atriumUrl`, secret-authenticated), driven over HTTP through the provider's
   * development pages: the ID token (with a nonce, `aud` = browserClientId) and the access
   * token the token endpoint answers (a JWT for `resource`, else opaque).
   */
  signInTokens(
    atriumUrl: string,
    login: string,
    resource?: string,
  ): Promise<{ idToken: string; accessToken: string }>;
  close(): Promise<void>;
}

/**
 * instance.json's `auth` for an Atrium that signs browsers in at `issuer` (and still takes
 * its client-credentials tokens for TEST_AUDIENCE): org admins are TEST_ORG_ADMIN_GROUP.
 */
export function oidcSignInAuth(issuer: TestIssuer, options: { publicClient?: boolean } = {}) {
  return {
    adapter: "oidc",
    issuer: issuer.issuer,
    clientId: issuer.browserClientId,
    ...(options.publicClient ? {} : { clientSecret: { env: "ATRIUM_TEST_OIDC_CLIENT_SECRET" } }),
    audience: TEST_AUDIENCE,
    scopes: ["openid", "profile", "email", "groups"],
    claims: { orgRole: "groups", orgAdminValues: [TEST_ORG_ADMIN_GROUP] },
  };
}

/**
 * A real OpenID provider (oidc-provider) on 127.0.0.1 with one ES256 key. It issues ES256
 * JWT access tokens for TEST_AUDIENCE through the client-credentials grant, and signs
 * browsers in through its development login and consent pages (any password), with PKCE
 * required and the account claims of testAccount().
 */
export async function startOidcIssuer(): Promise<TestIssuer> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const issuer = `http://127.0.0.1:${port}`;
  const browserClientId = `atrium-browser-${port}`;
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
    // Only an ES256 key exists, so every client signs ID tokens with it.
    clientDefaults: { id_token_signed_response_alg: "ES256" },
    jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: "test-es256", alg: "ES256", use: "sig" }] },
    scopes: ["api"],
    claims: { openid: ["sub"], profile: ["name"], email: ["email"], groups: ["groups"] },
    // ID tokens carry the profile claims, as most providers' do, not only the userinfo endpoint.
    conformIdTokenClaims: false,
    ttl: PROVIDER_TTL,
    findAccount: (_ctx: unknown, login: string) => ({
      accountId: login,
      claims: () => ({ ...testAccount(login), ...accountOverrides.get(login) }),
    }),
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      registration: {
        enabled: true,
        idFactory: () => browserClientId,
        secretFactory: () => BROWSER_CLIENT_SECRET,
      },
      resourceIndicators: {
        enabled: true,
        defaultResource: (_ctx: unknown, client: { clientId: string }) =>
          client.clientId === TEST_CLIENT_ID ? TEST_AUDIENCE : undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, resource: string, client: { clientId: string }) => ({
          scope: "api",
          audience: resource === CLIENT_AUDIENCE_RESOURCE ? client.clientId : TEST_AUDIENCE,
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
    browserClientId,
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
    async registerBrowserClient(atriumUrl, authMethod = "client_secret_basic") {
      await registerClient(`${issuer}/reg`, {
        redirect_uris: [`${atriumUrl}/auth/callback`],
        grant_types: ["authorization_code"],
        response_types: ["code"],
        token_endpoint_auth_method: authMethod,
      });
    },
    async signInTokens(atriumUrl, login, resource) {
      const redirectUri = `${atriumUrl}/auth/callback`;
      const verifier = randomBytes(32).toString("base64url");
      const authorize = new URL(`${issuer}/auth`);
      for (const [name, value] of Object.entries({
        response_type: "code",
        client_id: browserClientId,
        redirect_uri: redirectUri,
        scope: resource === undefined ? "openid profile email groups" : "openid profile email groups api",
        state: randomBytes(16).toString("base64url"),
        nonce: randomBytes(16).toString("base64url"),
        code_challenge: createHash("sha256").update(verifier).digest("base64url"),
        code_challenge_method: "S256",
        ...(resource === undefined ? {} : { resource }),
      })) {
        authorize.searchParams.set(name, value);
      }
      const landing = await passDevInteractions(authorize.href, login, redirectUri);
      const code = landing.searchParams.get("code");
      if (!code) throw new Error(`the test issuer gave no code: ${landing.href}`);
      const basic = Buffer.from(`${browserClientId}:${BROWSER_CLIENT_SECRET}`).toString("base64");
      const response = await fetch(`${issuer}/token`, {
        method: "POST",
        headers: { authorization: `Basic ${basic}`, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "authorization_code",
          code,
          redirect_uri: redirectUri,
          code_verifier: verifier,
          ...(resource === undefined ? {} : { resource }),
        }),
      });
      const body = (await response.json()) as { id_token?: string; access_token?: string };
      if (!body.id_token || !body.access_token) {
        throw new Error(`the test issuer gave no tokens: ${JSON.stringify(body)}`);
      }
      return { idToken: body.id_token, accessToken: body.access_token };
    },
    close: () => closeServer(server),
  };
}

/**
 * Signs in to the Atrium at `atriumUrl` as `login` over plain HTTP (no browser): its
 * /auth/login, the issuer's development pages, its /auth/callback. Returns the session
 * cookie (`name=value`). The issuer's browser client must be registered for `atriumUrl`.
 */
export async function signInOverHttp(atriumUrl: string, login: string): Promise<string> {
  const { loginState, callback } = await signInUpToCallback(atriumUrl, login);
  const landed = await fetch(callback, { redirect: "manual", headers: { cookie: loginState } });
  const session = landed.headers
    .getSetCookie()
    .map((cookie) => cookie.split(";")[0] ?? "")
    .find((pair) => /^(__Host-)?atrium_session=./.test(pair));
  if (landed.status !== 303 || session === undefined) {
    throw new Error(`/auth/callback answered ${landed.status}: ${(await landed.text()).slice(0, 300)}`);
  }
  return session;
}

/**
 * A sign-in as `login` over plain HTTP, stopped before Atrium's callback: the login-state
 * cookie /auth/login set (`name=value`) and the callback URL the provider sent the browser to,
 * with its code and state. `loginBase` is where /auth/login is fetched, when not `publicUrl`
 * (an https public URL in front of a plain listener).
 */
export async function signInUpToCallback(
  publicUrl: string,
  login: string,
  loginBase = publicUrl,
): Promise<{ loginState: string; callback: URL }> {
  const start = await fetch(`${loginBase}/auth/login`, { redirect: "manual" });
  const toProvider = start.headers.get("location");
  if (start.status !== 303 || toProvider === null) throw new Error(`/auth/login answered ${start.status}`);
  const loginState = start.headers
    .getSetCookie()
    .map((cookie) => cookie.split(";")[0])
    .join("; ");
  return { loginState, callback: await passDevInteractions(toProvider, login, `${publicUrl}/auth/callback`) };
}

const MAX_INTERACTION_STEPS = 12;

/**
 * Follows oidc-provider's redirects and answers its development login (any password) and
 * consent forms with plain HTTP and a cookie jar, until it redirects to `redirectUri`.
 */
async function passDevInteractions(startUrl: string, login: string, redirectUri: string): Promise<URL> {
  const cookies = new Map<string, string>();
  let url = startUrl;
  let form: URLSearchParams | undefined;
  for (let step = 0; step < MAX_INTERACTION_STEPS; step++) {
    if (url.startsWith(redirectUri)) return new URL(url);
    const response = await fetch(url, {
      method: form ? "POST" : "GET",
      redirect: "manual",
      headers: {
        cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join("; "),
        ...(form ? { "content-type": "application/x-www-form-urlencoded" } : {}),
      },
      ...(form ? { body: form.toString() } : {}),
    });
    for (const cookie of response.headers.getSetCookie()) {
      const [pair = ""] = cookie.split(";");
      const at = pair.indexOf("=");
      cookies.set(pair.slice(0, at), pair.slice(at + 1));
    }
    form = undefined;
    const location = response.headers.get("location");
    if (location !== null) {
      url = new URL(location, url).href;
      await response.body?.cancel();
      continue;
    }
    const html = await response.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    const prompt = /name="prompt" value="([^"]+)"/.exec(html)?.[1];
    if (action === undefined || prompt === undefined) {
      throw new Error(`stuck at the test issuer (${response.status}): ${html.slice(0, 300)}`);
    }
    url = new URL(action, url).href;
    form = new URLSearchParams({ prompt, ...(prompt === "login" ? { login, password: "any" } : {}) });
  }
  throw new Error(`still at the test issuer after ${MAX_INTERACTION_STEPS} steps: ${url}`);
}

/** RFC 7591 registration at an open registration endpoint; throws with the provider's answer on refusal. */
export async function registerClient(endpoint: string, metadata: Record<string, unknown>): Promise<void> {
  const response = await fetch(endpoint, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(metadata),
  });
  if (response.status !== 201) {
    throw new Error(`client registration answered ${response.status}: ${await response.text()}`);
  }
}

export function closeServer(server: ReturnType<typeof createServer>): Promise<void> {
  return new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}
