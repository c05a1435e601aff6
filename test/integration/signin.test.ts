import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { derivePrincipalId } from "../../src/identity/principal.ts";
import { DEV_PRINCIPAL } from "../../src/identity/providers/dev.ts";
import { sessionSecret } from "../../src/identity/session-secret.ts";
import { SECURE_SESSION_COOKIE, SESSION_COOKIE, Sessions } from "../../src/identity/sessions.ts";
import { parseInstance } from "../../src/instance/load.ts";
import type { InstanceConfig } from "../../src/instance/schema.ts";
import { createLogger } from "../../src/log.ts";
import { type RunningAtrium, startAtrium } from "../../src/server.ts";
import { StorageLayout } from "../../src/storage/paths.ts";
import { attemptSignIn, launchChromium, newLoopbackContext, signInWithBrowser } from "../helpers/browser.ts";
import {
  accountOverrides,
  oidcSignInAuth,
  signInOverHttp,
  signInUpToCallback,
  startOidcIssuer,
  TEST_SESSION,
  type TestIssuer,
  testAccount,
} from "../helpers/oidc-issuer.ts";

interface Instance {
  atrium: RunningAtrium;
  config: InstanceConfig;
  dir: string;
  /** The instance's own sessions, read from its data root with its secret (for lookups and clocks). */
  sessions(now?: () => number): Sessions;
  stop(): Promise<void>;
}

async function startInstance(
  auth: Record<string, unknown>,
  publicUrl = "http://127.0.0.1:0",
): Promise<Instance> {
  const dir = await mkdtemp(join(tmpdir(), "atrium-signin-"));
  const config = parseInstance(
    {
      auth,
      ...(auth.adapter === "dev" ? {} : { session: TEST_SESSION }),
      storage: { root: "./data" },
      http: { host: "127.0.0.1", port: 0, publicUrl },
    },
    { source: "test", baseDir: dir },
  );
  const atrium = await startAtrium(config, { log: createLogger("silent") });
  const layout = new StorageLayout(config.storage.root);
  return {
    atrium,
    config,
    dir,
    sessions: (now) =>
      new Sessions(layout, {
        secret: config.session.secret ?? "",
        maxAgeSeconds: config.session.maxAgeSeconds,
        secureCookies: false,
        ...(now ? { now } : {}),
      }),
    async stop() {
      await atrium.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A request carrying `value` as the session cookie, as a browser would send it. */
function withSessionCookie(url: string, value: string): Request {
  return new Request(url, { headers: { cookie: `${SESSION_COOKIE}=${value}` } });
}

let browser: Browser;
let context: BrowserContext;
let page: Page;

beforeAll(async () => {
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
});

beforeEach(async () => {
  context = await newLoopbackContext(browser);
  page = await context.newPage();
});

afterEach(async () => {
  await context?.close();
});

async function sessionCookie(url: string) {
  return (await context.cookies(url)).find((cookie) => cookie.name === SESSION_COOKIE);
}

describe("browser sign-in through an OpenID provider", () => {
  let issuer: TestIssuer;
  let instance: Instance;
  let url: string;

  beforeAll(async () => {
    issuer = await startOidcIssuer();
    instance = await startInstance(oidcSignInAuth(issuer));
    url = instance.atrium.url;
    await issuer.registerBrowserClient(url);
  });

  afterAll(async () => {
    await instance?.stop();
    await issuer?.close();
  });

  it("signs a person in and sets an HttpOnly, SameSite=Lax session cookie for the principal of (issuer, sub)", async () => {
    const startedAtMs = Date.now();
    await signInWithBrowser(page, url, "ada");
    expect(new URL(page.url()).pathname).toBe("/");
    expect(await page.textContent("main")).toContain("Signed in as Test ada (ada@example.test)");

    const cookie = await sessionCookie(url);
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Lax", secure: false, path: "/" });
    const maxAgeSeconds = instance.config.session.maxAgeSeconds;
    expect(cookie?.expires).toBeGreaterThan(startedAtMs / 1000 + maxAgeSeconds - 60);
    expect(cookie?.expires).toBeLessThan(Date.now() / 1000 + maxAgeSeconds + 60);
    // The login state is spent once the callback has used it.
    expect((await context.cookies(`${url}/auth/callback`)).map((c) => c.name)).not.toContain("atrium_login");

    const found = await instance.sessions().lookup(withSessionCookie(url, cookie?.value ?? ""));
    const account = testAccount("ada");
    expect(found).toMatchObject({
      kind: "signed-in",
      principal: {
        id: derivePrincipalId(issuer.issuer, "ada"),
        displayName: account.name,
        email: account.email,
        orgRole: "member",
      },
    });
    expect(await instance.atrium.users.get(derivePrincipalId(issuer.issuer, "ada"))).toMatchObject({
      displayName: account.name,
    });
  });

  it("maps the provider's group claim to org admin", async () => {
    await signInWithBrowser(page, url, "orgadmin-grace");
    const cookie = await sessionCookie(url);
    const found = await instance.sessions().lookup(withSessionCookie(url, cookie?.value ?? ""));
    expect(found).toMatchObject({ kind: "signed-in", principal: { orgRole: "admin" } });
  });

  it("lands on return_to, and an open-redirect attempt lands on / instead", async () => {
    const landing = await attemptSignIn(page, url, "ada", "/auth/logout?from=test");
    expect(landing.url.href).toBe(`${url}/auth/logout?from=test`);
    for (const attempt of ["//evil.example", "https://evil.example", "/\\evil.example", "/\t/evil.example"]) {
      // Signed out of Atrium but still signed in at the provider: the flow runs again through the callback.
      await context.clearCookies({ name: SESSION_COOKIE });
      const next = await attemptSignIn(page, url, "ada", attempt);
      expect(next.url.href, JSON.stringify(attempt)).toBe(`${url}/`);
      expect(next.status).toBe(200);
    }
  });

  it("a signed-in person who starts a sign-in again goes straight to return_to", async () => {
    await signInWithBrowser(page, url, "ada");
    const before = (await sessionCookie(url))?.value;
    const response = await page.goto(`${url}/auth/login?return_to=${encodeURIComponent("/auth/logout")}`);
    expect(response?.url()).toBe(`${url}/auth/logout`);
    expect((await sessionCookie(url))?.value).toBe(before);
  });

  it("sign-out deletes the session and clears the cookie; the old cookie is then invalid", async () => {
    await signInWithBrowser(page, url, "ada");
    const old = (await sessionCookie(url))?.value ?? "";
    const sessionsDir = join(instance.config.storage.root, "_instance", "sessions");
    const before = await readdir(sessionsDir);

    await page.goto(`${url}/auth/logout`);
    expect(await page.textContent("main")).toContain("Signed in as Test ada");
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${url}/auth/logout`);
    expect(await page.textContent("h1")).toBe("Signed out");

    expect(await sessionCookie(url)).toBeUndefined();
    expect(await readdir(sessionsDir)).toHaveLength(before.length - 1);
    expect(await instance.sessions().lookup(withSessionCookie(url, old))).toEqual({ kind: "invalid" });
    const home = await fetch(withSessionCookie(`${url}/`, old));
    expect(await home.text()).toContain("You are not signed in.");
    expect(home.headers.get("set-cookie")).toMatch(new RegExp(`^${SESSION_COOKIE}=; Max-Age=0`));
  });

  it("refuses another browser's callback (login CSRF): its state is not the one this browser started", async () => {
    // Browser B (the attacker) signs in; its callback URL carries its own code and state.
    const attacker = await newLoopbackContext(browser);
    let attackerCallback: string | undefined;
    try {
      const attackerPage = await attacker.newPage();
      attackerPage.on("request", (request) => {
        if (request.url().startsWith(`${url}/auth/callback?`)) attackerCallback = request.url();
      });
      await signInWithBrowser(attackerPage, url, "mallory-the-attacker");
    } finally {
      await attacker.close();
    }
    if (!attackerCallback) throw new Error("the attacker's callback was not seen");

    // Browser A (the victim) has a sign-in of its own in flight, and is sent B's callback.
    await page.goto(`${url}/auth/login`);
    expect(new URL(page.url()).origin).toBe(issuer.issuer);
    const response = await page.goto(attackerCallback);
    expect(response?.status()).toBe(400);
    expect(await page.textContent("h1")).toBe("Sign-in expired");
    expect(await sessionCookie(url)).toBeUndefined();
  });

  it("an org admin taken out of every group at the provider is a member from their next sign-in", async () => {
    const id = derivePrincipalId(issuer.issuer, "orgadmin-gus");
    const users = (cookie: string) => fetch(`${url}/v1/users`, { headers: { cookie } });
    expect((await users(await signInOverHttp(url, "orgadmin-gus"))).status).toBe(200);
    // Providers leave out a groups claim that would be empty, rather than send [].
    accountOverrides.set("orgadmin-gus", { groups: undefined });
    try {
      const again = await signInOverHttp(url, "orgadmin-gus");
      expect((await users(again)).status).toBe(403);
      expect((await instance.atrium.users.get(id))?.orgRole).toBe("member");
    } finally {
      accountOverrides.delete("orgadmin-gus");
    }
  });

  it("never switches a signed-in browser to another person: a callback for it is refused, its code unspent", async () => {
    const victim = await signInOverHttp(url, "victim");
    // A login state of the attacker's own sign-in, in the victim's browser however it got there.
    const { loginState, callback } = await signInUpToCallback(url, "mallory");
    const response = await fetch(callback, {
      redirect: "manual",
      headers: { cookie: `${victim}; ${loginState}` },
    });
    expect(response.status).toBe(409);
    expect(await response.text()).toContain("already signed in as Test victim");
    expect(response.headers.getSetCookie().some((c) => c.startsWith(`${SESSION_COOKIE}=`))).toBe(false);
    const home = await fetch(`${url}/`, { headers: { cookie: victim } });
    expect(await home.text()).toContain("Signed in as <strong>Test victim</strong>");
    // The code was not redeemed: the browser that started that sign-in can still finish it.
    expect((await fetch(callback, { redirect: "manual", headers: { cookie: loginState } })).status).toBe(303);
  });

  it("refuses a callback with no login state in the browser", async () => {
    const response = await page.goto(`${url}/auth/callback?code=abc&state=def`);
    expect(response?.status()).toBe(400);
    expect(await page.textContent("h1")).toBe("Sign-in expired");
    expect(await sessionCookie(url)).toBeUndefined();
  });

  it("refuses an authorization response that names another issuer (RFC 9207), or none", async () => {
    let state: string | null = null;
    page.on("request", (request) => {
      if (request.url().startsWith(`${issuer.issuer}/auth?`))
        state = new URL(request.url()).searchParams.get("state");
    });
    // The provider's discovery says it always sends iss, so a response without one is refused too.
    for (const iss of ["&iss=http%3A%2F%2F127.0.0.1%3A9", ""]) {
      state = null;
      await page.goto(`${url}/auth/login`);
      if (!state) throw new Error("no authorization request was seen");
      const response = await page.goto(`${url}/auth/callback?code=any&state=${state}${iss}`);
      expect(response?.status(), iss).toBe(400);
      expect(await page.textContent("h1")).toBe("Sign-in refused");
      expect(await sessionCookie(url)).toBeUndefined();
    }
  });

  it("shows the provider's refusal as a page with a way to try again", async () => {
    await page.goto(`${url}/auth/login?return_to=${encodeURIComponent("/auth/logout")}`);
    // The provider's own Cancel link answers the callback with error=access_denied.
    await page.getByText("[ Cancel ]").click();
    await page.waitForURL((next) => next.href.startsWith(`${url}/auth/callback`));
    expect(await page.textContent("main")).toContain("The sign-in was declined");
    expect(await page.getAttribute("a.button", "href")).toBe("/auth/login?return_to=%2Fauth%2Flogout");
    expect(await sessionCookie(url)).toBeUndefined();
  });

  it("a deactivated person gets a 403 page and no session", async () => {
    await signInWithBrowser(page, url, "mallory");
    const id = derivePrincipalId(issuer.issuer, "mallory");
    await instance.atrium.users.setDeactivated(id, true);
    // The session this browser already had no longer counts as signed in.
    const home = await page.goto(`${url}/`);
    expect(home?.status()).toBe(403);
    expect(await page.textContent("h1")).toBe("Account deactivated");
    const fresh = await newLoopbackContext(browser);
    try {
      const freshPage = await fresh.newPage();
      const landing = await attemptSignIn(freshPage, url, "mallory");
      expect(landing.status).toBe(403);
      expect(await freshPage.textContent("main")).toContain("deactivated");
      expect((await fresh.cookies(url)).map((c) => c.name)).not.toContain(SESSION_COOKIE);
    } finally {
      await fresh.close();
      await instance.atrium.users.setDeactivated(id, false);
    }
  });

  it("a session from before a deactivation does not come back with the reactivation", async () => {
    await signInWithBrowser(page, url, "nora");
    const id = derivePrincipalId(issuer.issuer, "nora");
    const before = (await sessionCookie(url))?.value ?? "";
    expect((await fetch(withSessionCookie(`${url}/v1/bootstrap`, before))).status).toBe(200);
    // A stolen laptop: the person is deactivated, then let back in with a new sign-in in mind.
    await instance.atrium.users.setDeactivated(id, true);
    await instance.atrium.users.setDeactivated(id, false);
    expect((await fetch(withSessionCookie(`${url}/v1/bootstrap`, before))).status).toBe(401);
    expect(await (await fetch(withSessionCookie(`${url}/`, before))).text()).toContain(
      "You are not signed in.",
    );
    // Signing in again after the reactivation works.
    await signInWithBrowser(page, url, "nora");
    const after = (await sessionCookie(url))?.value ?? "";
    expect(after).not.toBe(before);
    expect((await fetch(withSessionCookie(`${url}/v1/bootstrap`, after))).status).toBe(200);
  });

  it("a forged or tampered cookie is invalid and counts as not signed in", async () => {
    await signInWithBrowser(page, url, "ada");
    const value = (await sessionCookie(url))?.value ?? "";
    const [id, signature] = value.split(".") as [string, string];
    const tampered = `${id.slice(0, -1)}${id.endsWith("A") ? "B" : "A"}.${signature}`;
    const sessions = instance.sessions();
    for (const forged of [tampered, `${id}.${"A".repeat(43)}`, "not-a-session"]) {
      expect(await sessions.lookup(withSessionCookie(url, forged))).toEqual({ kind: "invalid" });
      expect(await (await fetch(withSessionCookie(`${url}/`, forged))).text()).toContain(
        "You are not signed in.",
      );
    }
  });

  it("a session past its maximum age is invalid", async () => {
    await signInWithBrowser(page, url, "ada");
    const value = (await sessionCookie(url))?.value ?? "";
    const maxAgeMs = instance.config.session.maxAgeSeconds * 1000;
    expect((await instance.sessions().lookup(withSessionCookie(url, value))).kind).toBe("signed-in");
    const later = instance.sessions(() => Date.now() + maxAgeMs);
    expect(await later.lookup(withSessionCookie(url, value))).toEqual({ kind: "invalid" });
  });
});

describe("browser sign-in as a public client (no client secret)", () => {
  it("exchanges the code with PKCE and the client id alone", async () => {
    const issuer = await startOidcIssuer();
    const instance = await startInstance(oidcSignInAuth(issuer, { publicClient: true }));
    try {
      expect(instance.config.auth).toMatchObject({ clientAuthMethod: "none" });
      await issuer.registerBrowserClient(instance.atrium.url, "none");
      await signInWithBrowser(page, instance.atrium.url, "ada");
      expect(await page.textContent("main")).toContain("Signed in as Test ada");
    } finally {
      await instance.stop();
      await issuer.close();
    }
  });
});

describe("an identity provider that cannot be reached", () => {
  it("/auth/login answers a 503 page on every attempt while the provider cannot be reached", async () => {
    const instance = await startInstance({
      adapter: "oidc",
      issuer: "http://127.0.0.1:9",
      clientId: "atrium",
    });
    try {
      for (let attempt = 0; attempt < 2; attempt++) {
        const response = await fetch(`${instance.atrium.url}/auth/login`, { redirect: "manual" });
        expect(response.status).toBe(503);
        expect(response.headers.get("content-type")).toMatch(/^text\/html/);
        expect(await response.text()).toContain("could not reach the identity provider");
      }
    } finally {
      await instance.stop();
    }
  });
});

describe("sign-in under dev", () => {
  let instance: Instance;

  beforeAll(async () => {
    instance = await startInstance({ adapter: "dev" });
  });

  afterAll(async () => {
    await instance?.stop();
  });

  it("/auth/login starts a session for the local developer and returns to a local path only", async () => {
    const url = instance.atrium.url;
    const response = await fetch(`${url}/auth/login?return_to=%2Fv1%2Fbootstrap`, { redirect: "manual" });
    expect(response.status).toBe(303);
    expect(response.headers.get("location")).toBe("/v1/bootstrap");
    const cookie = response.headers.get("set-cookie") ?? "";
    expect(cookie).toMatch(
      new RegExp(`^${SESSION_COOKIE}=[^;]+; Max-Age=\\d+; Path=/; HttpOnly; SameSite=Lax$`),
    );
    const value = (cookie.split(";")[0] as string).slice(SESSION_COOKIE.length + 1);
    const layout = new StorageLayout(instance.config.storage.root);
    const sessions = new Sessions(layout, {
      secret: await sessionSecret(instance.config.session, layout),
      maxAgeSeconds: instance.config.session.maxAgeSeconds,
      secureCookies: false,
    });
    expect(await sessions.lookup(withSessionCookie(url, value))).toMatchObject({
      kind: "signed-in",
      principal: DEV_PRINCIPAL,
    });
    const evil = await fetch(`${url}/auth/login?return_to=%2F%2Fevil.example`, { redirect: "manual" });
    expect(evil.headers.get("location")).toBe("/");
  });

  it("the callback has nothing to finish", async () => {
    expect((await fetch(`${instance.atrium.url}/auth/callback?code=x&state=y`)).status).toBe(404);
  });
});

describe("an https public URL", () => {
  it("sets a Secure session cookie with the __Host- prefix", async () => {
    const instance = await startInstance({ adapter: "dev" }, "https://atrium.example");
    try {
      const response = await fetch(`http://127.0.0.1:${instance.atrium.port}/auth/login`, {
        redirect: "manual",
      });
      expect(response.headers.get("set-cookie")).toMatch(
        new RegExp(`^${SECURE_SESSION_COOKIE}=[^;]+; Max-Age=\\d+; Path=/; HttpOnly; Secure; SameSite=Lax$`),
      );
    } finally {
      await instance.stop();
    }
  });
});
