import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodeJwt, decodeProtectedHeader } from "jose";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { derivePrincipalId } from "../../src/identity/principal.ts";
import { SESSION_COOKIE, Sessions } from "../../src/identity/sessions.ts";
import { parseInstance } from "../../src/instance/load.ts";
import type { InstanceConfig, OidcAuth } from "../../src/instance/schema.ts";
import { createLogger } from "../../src/log.ts";
import { type RunningAtrium, startAtrium } from "../../src/server.ts";
import { withWorkosMembershipRole } from "../../src/signin/workos-membership.ts";
import { StorageLayout } from "../../src/storage/paths.ts";
import {
  launchChromium,
  newLoopbackContext,
  signInWithBrowser,
  startRedirectCatcher,
} from "../helpers/browser.ts";
import { TEST_SESSION } from "../helpers/oidc-issuer.ts";
import {
  startWorkosIssuer,
  WORKOS_ADMIN,
  WORKOS_API_KEY_ENV,
  WORKOS_MEMBER,
  WORKOS_ORG_ID,
  type WorkosIssuer,
} from "../helpers/workos-issuer.ts";

/** The resource indicator configured in WorkOS for Atrium's API: the `aud` of its tokens. */
const ATRIUM_AUDIENCE = "https://atrium.test/workos";
/** An organization in the same WorkOS environment that is not Atrium's. */
const OTHER_ORG_ID = "org_01JQ0F3X8ZQ2W6T4N5R7Y9K1MB";

let workos: WorkosIssuer;
let atrium: RunningAtrium;
let config: InstanceConfig;
let dir: string;
let catcher: Awaited<ReturnType<typeof startRedirectCatcher>>;
let browser: Browser;
let context: BrowserContext;
let page: Page;

beforeAll(async () => {
  workos = await startWorkosIssuer();
  catcher = await startRedirectCatcher();
  dir = await mkdtemp(join(tmpdir(), "atrium-workos-"));
  config = parseInstance(
    {
      auth: {
        adapter: "workos",
        authkitDomain: workos.authkitDomain,
        clientId: workos.clientId,
        apiKey: { env: WORKOS_API_KEY_ENV },
        audience: ATRIUM_AUDIENCE,
        organizationId: WORKOS_ORG_ID,
        // The stand-in also serves the organization-memberships API.
        apiUrl: workos.authkitDomain,
      },
      session: TEST_SESSION,
      storage: { root: "./data" },
      http: { host: "127.0.0.1", port: 0, publicUrl: "http://127.0.0.1:0" },
    },
    { source: "test", baseDir: dir },
  );
  atrium = await startAtrium(config, { log: createLogger("silent") });
  await workos.registerAtrium(atrium.url);
  workos.setMembershipRole(WORKOS_ADMIN.id, "admin");
  workos.setMembershipRole(WORKOS_MEMBER.id, "member");
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await atrium?.close();
  await catcher?.close();
  await workos?.close();
  await rm(dir, { recursive: true, force: true });
});

beforeEach(async () => {
  context = await newLoopbackContext(browser);
  page = await context.newPage();
});

afterEach(async () => {
  await context?.close();
});

async function signedInPrincipal() {
  const cookie = (await context.cookies(atrium.url)).find((c) => c.name === SESSION_COOKIE);
  const sessions = new Sessions(new StorageLayout(config.storage.root), {
    secret: config.session.secret ?? "",
    maxAgeSeconds: config.session.maxAgeSeconds,
    secureCookies: false,
  });
  const found = await sessions.lookup(
    new Request(atrium.url, { headers: { cookie: `${SESSION_COOKIE}=${cookie?.value ?? ""}` } }),
  );
  if (found.kind !== "signed-in") throw new Error(`no session: ${found.kind}`);
  return found.principal;
}

async function sessionCookie(): Promise<string> {
  const cookie = (await context.cookies(atrium.url)).find((c) => c.name === SESSION_COOKIE);
  return `${SESSION_COOKIE}=${cookie?.value ?? ""}`;
}

function listUsers(token: string): Promise<Response> {
  return fetch(`${atrium.url}/v1/users`, { headers: { authorization: `Bearer ${token}` } });
}

describe("the workos adapter", () => {
  it("resolves to AuthKit's endpoints with the API key as a client_secret_post secret", () => {
    expect(config.auth).toMatchObject({
      adapter: "workos",
      issuer: workos.authkitDomain,
      clientId: workos.clientId,
      clientSecret: process.env[WORKOS_API_KEY_ENV],
      clientAuthMethod: "client_secret_post",
      claims: { orgRole: "role", orgAdminValues: ["admin"] },
    });
  });

  it("signs a WorkOS admin in through AuthKit in the browser, as an org admin named from the ID token", async () => {
    await signInWithBrowser(page, atrium.url, WORKOS_ADMIN.id);
    expect(await page.textContent("main")).toContain("Signed in as Ada Admin (ada@workos.example)");
    expect(await signedInPrincipal()).toEqual({
      id: derivePrincipalId(workos.authkitDomain, WORKOS_ADMIN.id),
      displayName: "Ada Admin",
      email: WORKOS_ADMIN.email,
      orgRole: "admin",
    });
  });

  it("a WorkOS member signs in as an org member", async () => {
    await signInWithBrowser(page, atrium.url, WORKOS_MEMBER.id);
    expect(await signedInPrincipal()).toMatchObject({
      id: derivePrincipalId(workos.authkitDomain, WORKOS_MEMBER.id),
      orgRole: "member",
    });
  });

  it("accepts a WorkOS user access token for Atrium's audience at REST, as the org role its holder signed in with", async () => {
    await signInWithBrowser(page, atrium.url, WORKOS_ADMIN.id);
    const adminToken = await workos.userAccessToken(page, WORKOS_ADMIN, ATRIUM_AUDIENCE, catcher.redirectUri);
    expect(decodeProtectedHeader(adminToken)).toMatchObject({ alg: "RS256" });
    expect(decodeJwt(adminToken)).toMatchObject({
      iss: workos.authkitDomain,
      aud: ATRIUM_AUDIENCE,
      sub: WORKOS_ADMIN.id,
      org_id: WORKOS_ORG_ID,
      role: "admin",
      permissions: WORKOS_ADMIN.permissions,
      sid: expect.stringMatching(/^app_consent_01/),
      client_id: expect.stringMatching(/^client_01/),
    });
    const listed = await listUsers(adminToken);
    expect(listed.status).toBe(200);
    const body = (await listed.json()) as { users: Array<{ id: string; orgRole: string }> };
    expect(body.users).toContainEqual(
      expect.objectContaining({
        id: derivePrincipalId(workos.authkitDomain, WORKOS_ADMIN.id),
        orgRole: "admin",
      }),
    );

    // Another browser: AuthKit still has the admin signed in in this one.
    const memberContext = await newLoopbackContext(browser);
    try {
      const memberToken = await workos.userAccessToken(
        await memberContext.newPage(),
        WORKOS_MEMBER,
        ATRIUM_AUDIENCE,
        catcher.redirectUri,
      );
      expect(decodeJwt(memberToken)).toMatchObject({ sub: WORKOS_MEMBER.id, role: "member" });
      expect((await listUsers(memberToken)).status).toBe(403);
    } finally {
      await memberContext.close();
    }
  });

  it("refuses a WorkOS access token issued for another resource", async () => {
    const token = await workos.userAccessToken(
      page,
      WORKOS_ADMIN,
      "https://other-api.example",
      catcher.redirectUri,
    );
    expect(decodeJwt(token).aud).toBe("https://other-api.example");
    expect((await listUsers(token)).status).toBe(401);
  });
});

describe("the org role from the WorkOS organization membership", () => {
  afterEach(() => {
    workos.setMembershipRole(WORKOS_ADMIN.id, "admin");
    workos.setMembershipRole(WORKOS_MEMBER.id, "member");
    workos.setTokenOrganization(WORKOS_ORG_ID);
  });

  it("is what the memberships API says, over any role a token carries", async () => {
    workos.setMembershipRole(WORKOS_ADMIN.id, "member");
    await signInWithBrowser(page, atrium.url, WORKOS_ADMIN.id);
    expect(await signedInPrincipal()).toMatchObject({ orgRole: "member" });
  });

  it("is never a bearer token's role claim, and no token writes a role into the directory", async () => {
    workos.setMembershipRole(WORKOS_ADMIN.id, "member");
    await signInWithBrowser(page, atrium.url, WORKOS_ADMIN.id);
    const session = { headers: { cookie: await sessionCookie() } };
    const id = derivePrincipalId(workos.authkitDomain, WORKOS_ADMIN.id);
    expect((await fetch(`${atrium.url}/v1/users`, session)).status).toBe(403);

    const token = await workos.userAccessToken(page, WORKOS_ADMIN, ATRIUM_AUDIENCE, catcher.redirectUri);
    expect(decodeJwt(token)).toMatchObject({ org_id: WORKOS_ORG_ID, role: "admin" });
    expect((await listUsers(token)).status).toBe(403);
    expect((await atrium.users.get(id))?.orgRole).toBe("member");
    expect((await fetch(`${atrium.url}/v1/users`, session)).status).toBe(403);
  });

  it("accepts a token issued in another organization, whose role counts for nothing here", async () => {
    workos.setMembershipRole(WORKOS_MEMBER.id, "admin");
    workos.setTokenOrganization(OTHER_ORG_ID);
    await signInWithBrowser(page, atrium.url, WORKOS_MEMBER.id);
    const token = await workos.userAccessToken(page, WORKOS_MEMBER, ATRIUM_AUDIENCE, catcher.redirectUri);
    expect(decodeJwt(token)).toMatchObject({ org_id: OTHER_ORG_ID, role: "member" });
    // Its holder is an admin of Atrium's organization; a member's role elsewhere demotes nobody.
    expect((await listUsers(token)).status).toBe(200);
    const id = derivePrincipalId(workos.authkitDomain, WORKOS_MEMBER.id);
    expect((await atrium.users.get(id))?.orgRole).toBe("admin");
  });

  it("is member for someone with no membership in the organization", async () => {
    workos.setMembershipRole(WORKOS_ADMIN.id, undefined);
    expect(await withWorkosMembershipRole({ sub: WORKOS_ADMIN.id }, config.auth as OidcAuth)).toMatchObject({
      role: [],
    });
  });

  it("fails the sign-in when the API refuses the key, rather than guessing a role", async () => {
    const wrongKey = { ...(config.auth as OidcAuth), clientSecret: "sk_test_wrong" };
    await expect(withWorkosMembershipRole({ sub: WORKOS_ADMIN.id }, wrongKey)).rejects.toMatchObject({
      reason: "provider_unavailable",
    });
  });

  it("takes apiUrl only together with organizationId", () => {
    expect(() =>
      parseInstance(
        {
          auth: {
            adapter: "workos",
            authkitDomain: "https://acme.authkit.app",
            clientId: "client_x",
            apiKey: { env: WORKOS_API_KEY_ENV },
            apiUrl: "https://api.workos.test",
          },
          session: TEST_SESSION,
          storage: { root: "./data" },
          http: { host: "127.0.0.1", port: 0, publicUrl: "http://127.0.0.1:0" },
        },
        { source: "test", baseDir: dir },
      ),
    ).toThrow(/apiUrl is used only/);
  });
});
