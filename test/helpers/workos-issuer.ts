import { createHash, randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair } from "jose";
import Provider from "oidc-provider";
import type { Page } from "playwright-core";
import { passProviderPages } from "./browser.ts";
import { closeServer, PROVIDER_TTL, registerClient } from "./oidc-issuer.ts";

// A stand-in for a WorkOS AuthKit domain, built on oidc-provider, shaped after WorkOS's
// documentation (test machines cannot reach WorkOS):
// - endpoints: /oauth2/authorize, /oauth2/token, /oauth2/jwks, /oauth2/userinfo and
//   /.well-known/openid-configuration at the AuthKit domain, which is the issuer;
// - the token endpoint takes client_id and client_secret in the form body (client_secret_post);
// - ID tokens (RS256) carry sub = `user_…`, name, given_name, family_name, email,
//   email_verified, and no role;
// - access tokens are RS256 JWTs: sub, client_id, scope, jti, and org_id and sid (a consent
//   id); aud is the requested resource, or the client id when none was requested. Like
//   AuthKit's session tokens, they also carry the person's `role` and `permissions`.

/** The environment's API key, which `auth.apiKey` names and Atrium sends as its client secret. */
process.env.ATRIUM_TEST_WORKOS_API_KEY ??= `sk_test_${randomBytes(24).toString("base64url")}`;
export const WORKOS_API_KEY_ENV = "ATRIUM_TEST_WORKOS_API_KEY";

export const WORKOS_ORG_ID = "org_01HRDMC6CM357W30QMHMQ96Q0S";
const MEMBERSHIPS_PATH = "/user_management/organization_memberships";

export interface WorkosPerson {
  /** Also the login typed at the development login page. */
  id: string;
  firstName: string;
  lastName: string;
  email: string;
  role: string;
  permissions: string[];
}

export const WORKOS_ADMIN: WorkosPerson = {
  id: "user_01JQ0E27VT3MH79RY0FVA4QBP9",
  firstName: "Ada",
  lastName: "Admin",
  email: "ada@workos.example",
  role: "admin",
  permissions: ["widgets:manage", "widgets:read"],
};

export const WORKOS_MEMBER: WorkosPerson = {
  id: "user_01JQ0E2B1N7Q5Y3KX2W9T8V6RM",
  firstName: "Max",
  lastName: "Member",
  email: "max@workos.example",
  role: "member",
  permissions: ["widgets:read"],
};

const PEOPLE = new Map([WORKOS_ADMIN, WORKOS_MEMBER].map((person) => [person.id, person]));

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/** A WorkOS-style id: prefix + a 26-character ULID-like string. */
function workosId(prefix: string): string {
  const bytes = randomBytes(26);
  return `${prefix}_01${[...bytes.subarray(0, 24)].map((b) => CROCKFORD[b % 32]).join("")}`;
}

export interface WorkosIssuer {
  /** The AuthKit domain: issuer and base of every endpoint. */
  authkitDomain: string;
  /** The client id Atrium signs in with (`auth.clientId`). */
  clientId: string;
  /** The person's membership role in WORKOS_ORG_ID as the memberships API reports it; `undefined` for none. */
  setMembershipRole(userId: string, role: string | undefined): void;
  /** The organization access tokens name in `org_id` (and whose role they carry); WORKOS_ORG_ID until set. */
  setTokenOrganization(organizationId: string): void;
  /** Registers Atrium's client (client_secret_post, the API key as secret) for the instance at `atriumUrl`. */
  registerAtrium(atriumUrl: string): Promise<void>;
  /**
   * A user access token for `resource`, as an MCP client would get one: a public client
   * with PKCE runs the authorization code flow in `page` as `person`.
   */
  userAccessToken(page: Page, person: WorkosPerson, resource: string, redirectUri: string): Promise<string>;
  close(): Promise<void>;
}

export async function startWorkosIssuer(): Promise<WorkosIssuer> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const authkitDomain = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clientId = workosId("client");
  // Registrations share oidc-provider's process-wide store, so each says which id it gets.
  let nextRegistration = { id: clientId, secret: "" };
  const { privateKey } = await generateKeyPair("RS256", { extractable: true });
  let tokenOrganization = WORKOS_ORG_ID;
  const environmentResource = `${authkitDomain}/environment`;

  const provider = new Provider(authkitDomain, {
    routes: {
      authorization: "/oauth2/authorize",
      token: "/oauth2/token",
      jwks: "/oauth2/jwks",
      userinfo: "/oauth2/userinfo",
      registration: "/oauth2/register",
    },
    jwks: {
      keys: [
        { ...(await exportJWK(privateKey)), kid: workosId("sso_oidc_key_pair"), alg: "RS256", use: "sig" },
      ],
    },
    clientDefaults: {
      id_token_signed_response_alg: "RS256",
      token_endpoint_auth_method: "client_secret_post",
    },
    scopes: ["openid", "profile", "email", "offline_access"],
    claims: {
      openid: ["sub"],
      profile: ["name", "given_name", "family_name"],
      email: ["email", "email_verified"],
    },
    conformIdTokenClaims: false,
    ttl: PROVIDER_TTL,
    findAccount: (_ctx: unknown, id: string) => {
      const person = PEOPLE.get(id);
      if (!person) return undefined;
      return {
        accountId: id,
        claims: () => ({
          sub: id,
          name: `${person.firstName} ${person.lastName}`,
          given_name: person.firstName,
          family_name: person.lastName,
          email: person.email,
          email_verified: true,
        }),
      };
    },
    extraTokenClaims: (_ctx: unknown, token: { accountId?: string; kind: string }) => {
      const person = token.accountId === undefined ? undefined : PEOPLE.get(token.accountId);
      if (token.kind !== "AccessToken" || !person) return undefined;
      return {
        org_id: tokenOrganization,
        sid: workosId("app_consent"),
        role: person.role,
        permissions: person.permissions,
      };
    },
    features: {
      devInteractions: { enabled: true },
      registration: {
        enabled: true,
        idFactory: () => nextRegistration.id,
        secretFactory: () => nextRegistration.secret,
      },
      resourceIndicators: {
        enabled: true,
        // Without a resource, the access token is for the environment: its aud is the client id.
        defaultResource: (_ctx: unknown, _client: unknown, oneOf?: string) => oneOf ?? environmentResource,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, resource: string, client: { clientId: string }) => ({
          scope: "openid profile email",
          audience: resource === environmentResource ? client.clientId : resource,
          accessTokenTTL: 300,
          accessTokenFormat: "jwt",
          jwt: { sign: { alg: "RS256" } },
        }),
      },
    },
  });
  // The stand-in also answers WorkOS's organization-memberships API (api.workos.com in
  // production; `auth.apiUrl` points here), authenticated with the API key.
  const membershipRoles = new Map<string, string>();
  const oidcHandler = provider.callback();
  server.on("request", (request, response) => {
    const url = new URL(request.url ?? "/", authkitDomain);
    if (url.pathname !== MEMBERSHIPS_PATH) return oidcHandler(request, response);
    if (request.headers.authorization !== `Bearer ${process.env[WORKOS_API_KEY_ENV]}`) {
      response.writeHead(401, { "content-type": "application/json" });
      return response.end(JSON.stringify({ message: "Unauthorized" }));
    }
    const userId = url.searchParams.get("user_id") ?? "";
    const role = membershipRoles.get(userId);
    const data =
      role === undefined || url.searchParams.get("organization_id") !== WORKOS_ORG_ID
        ? []
        : [
            {
              object: "organization_membership",
              id: workosId("om"),
              user_id: userId,
              organization_id: WORKOS_ORG_ID,
              status: "active",
              role: { slug: role },
              roles: [{ slug: role }],
            },
          ];
    response.writeHead(200, { "content-type": "application/json" });
    response.end(JSON.stringify({ object: "list", data, list_metadata: { before: null, after: null } }));
  });

  return {
    authkitDomain,
    clientId,
    setTokenOrganization(organizationId) {
      tokenOrganization = organizationId;
    },
    setMembershipRole(userId, role) {
      if (role === undefined) membershipRoles.delete(userId);
      else membershipRoles.set(userId, role);
    },
    async registerAtrium(atriumUrl) {
      nextRegistration = { id: clientId, secret: process.env[WORKOS_API_KEY_ENV] as string };
      await registerClient(`${authkitDomain}/oauth2/register`, {
        redirect_uris: [`${atriumUrl}/auth/callback`],
        grant_types: ["authorization_code"],
        response_types: ["code"],
        token_endpoint_auth_method: "client_secret_post",
      });
    },
    async userAccessToken(page, person, resource, redirectUri) {
      const mcpClientId = workosId("client");
      nextRegistration = { id: mcpClientId, secret: "" };
      await registerClient(`${authkitDomain}/oauth2/register`, {
        redirect_uris: [redirectUri],
        grant_types: ["authorization_code"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
      });
      const verifier = randomBytes(32).toString("base64url");
      const authorize = new URL(`${authkitDomain}/oauth2/authorize`);
      for (const [name, value] of Object.entries({
        response_type: "code",
        client_id: mcpClientId,
        redirect_uri: redirectUri,
        scope: "openid profile email",
        state: randomBytes(16).toString("base64url"),
        nonce: randomBytes(16).toString("base64url"),
        code_challenge: createHash("sha256").update(verifier).digest("base64url"),
        code_challenge_method: "S256",
        resource,
      })) {
        authorize.searchParams.set(name, value);
      }
      const landing = await passProviderPages(page, authorize.href, person.id, (url) =>
        url.href.startsWith(redirectUri),
      );
      const code = landing.url.searchParams.get("code");
      if (!code) throw new Error(`no code in ${landing.url.href}`);
      const response = await fetch(`${authkitDomain}/oauth2/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "authorization_code",
          code,
          redirect_uri: redirectUri,
          code_verifier: verifier,
          client_id: mcpClientId,
          resource,
        }),
      });
      const body = (await response.json()) as { access_token?: string };
      if (!body.access_token) throw new Error(`no access token: ${JSON.stringify(body)}`);
      return body.access_token;
    },
    close: () => closeServer(server),
  };
}
