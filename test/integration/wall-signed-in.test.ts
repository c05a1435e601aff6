import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { derivePrincipalId } from "../../src/identity/principal.ts";
import { SESSION_COOKIE } from "../../src/identity/sessions.ts";
import { startTestAtrium, TEST_USER_HEADER, type TestAtrium } from "../helpers/atrium.ts";
import { launchChromium, newLoopbackContext, signInWithBrowser } from "../helpers/browser.ts";
import { obtainTokensWithCookie, registerClient } from "../helpers/oauth.ts";
import {
  oidcSignInAuth,
  startOidcIssuer,
  TEST_SESSION,
  type TestIssuer,
  testAccount,
} from "../helpers/oidc-issuer.ts";
import { describeWall, type WallPeople } from "./wall-suite.ts";

// The wall tests of test/integration/wall-suite.ts with real people: an `oidc` instance, each
// person signed in once through the OpenID provider's pages in headless Chromium. REST carries
// that browser's session cookie and nothing else; MCP carries an Atrium access token for the
// one workspace, from /oauth/authorize → consent → /oauth/token with that cookie. One instance
// serves every test; each test makes its own workspaces.

/** Signed in before the first test; anyone else (the suite's newcomer) signs in when first needed. */
const REGULARS = ["alice", "bob", "carol"];

let issuer: TestIssuer;
let instance: TestAtrium;
let browser: Browser;
let people: WallPeople;

beforeAll(async () => {
  issuer = await startOidcIssuer();
  instance = await startTestAtrium({ auth: oidcSignInAuth(issuer), session: TEST_SESSION });
  await issuer.registerBrowserClient(instance.url);
  browser = await launchChromium();
  people = signedInPeople(instance, issuer, browser);
  for (const name of REGULARS) await people.signIn(name);
});

afterAll(async () => {
  await browser?.close();
  await instance?.stop();
  await issuer?.close();
});

function signedInPeople(t: TestAtrium, idp: TestIssuer, chromium: Browser): WallPeople {
  const cookies = new Map<string, Promise<string>>();
  const tokens = new Map<string, Promise<string>>();
  let clientId: Promise<string> | undefined;

  const id = (name: string) => derivePrincipalId(idp.issuer, name);

  /** `make` once per key; a failure is not kept, so a later attempt tries again. */
  function once(cache: Map<string, Promise<string>>, key: string, make: () => Promise<string>) {
    let value = cache.get(key);
    if (!value) {
      value = make();
      cache.set(key, value);
      value.catch(() => cache.delete(key));
    }
    return value;
  }

  // One tab signs everyone in, one person at a time, with its cookies cleared before each
  // (no provider session or Atrium cookie carries over): a context per person costs more.
  let tab: Promise<{ context: BrowserContext; page: Page }> | undefined;
  let turns: Promise<unknown> = Promise.resolve();

  /** A real browser sign-in; the cookie it leaves is the person's for the whole file. */
  function signIn(name: string): Promise<string> {
    const turn = turns.then(async () => {
      tab ??= newLoopbackContext(chromium).then(async (context) => ({
        context,
        page: await context.newPage(),
      }));
      const { context, page } = await tab;
      await context.clearCookies();
      await signInWithBrowser(page, t.url, name);
      const cookie = (await context.cookies(t.url)).find((c) => c.name === SESSION_COOKIE);
      if (!cookie) throw new Error(`${name} signed in but the browser holds no ${SESSION_COOKIE}`);
      const pair = `${cookie.name}=${cookie.value}`;
      // The session is the person the provider vouched for, under the id the suite uses.
      const session = await t.atrium.sessions.lookup(new Request(t.url, { headers: { cookie: pair } }));
      if (session.kind !== "signed-in" || session.principal.id !== id(name)) {
        throw new Error(`${name}'s session is ${JSON.stringify(session)}, not ${id(name)}`);
      }
      return pair;
    });
    turns = turn.catch(() => undefined);
    return turn;
  }

  const cookieOf = (name: string) => once(cookies, name, () => signIn(name));

  /**
   * One token per person and workspace, kept for the file: a test that changes membership
   * finds the very token the person already holds refused, not a fresh one.
   */
  function tokenOf(name: string, workspaceId: string): Promise<string> {
    return once(tokens, `${name} ${workspaceId}`, async () => {
      clientId ??= registerClient(t).then((client) => client.client_id);
      const issued = await obtainTokensWithCookie(t, await cookieOf(name), workspaceId, {
        clientId: await clientId,
      });
      return issued.access_token;
    });
  }

  return {
    url: t.url,
    atrium: t.atrium,
    id,
    email: (name) => testAccount(name).email,
    signIn: async (name) => {
      await cookieOf(name);
    },
    sessionCookie: cookieOf,
    accessToken: tokenOf,
    async rest(name, method, path, body, headers = {}) {
      const credential: Record<string, string> = name === null ? {} : { cookie: await cookieOf(name) };
      return t.rest(null, method, path, body, { ...credential, ...headers });
    },
    async mcp(name, workspaceId, { headers, body }) {
      const credential: Record<string, string> =
        name === null ? {} : { authorization: `Bearer ${await tokenOf(name, workspaceId)}` };
      return t.rest(null, "POST", `/mcp/${workspaceId}`, body, { ...headers, ...credential });
    },
    async mcpClient(name, workspaceId, era) {
      return t.mcpClient(null, workspaceId, {
        headers: { authorization: `Bearer ${await tokenOf(name, workspaceId)}` },
        era,
      });
    },
  };
}

describeWall("signed-in", () => people);

describe("the people here are real", () => {
  it("the test header names nobody, and a person is the principal of (issuer, login)", async () => {
    const header = await instance.rest(null, "GET", "/v1/workspaces", undefined, {
      [TEST_USER_HEADER]: "alice",
    });
    expect(header.status).toBe(401);
    const me = await people.rest("alice", "GET", "/v1/bootstrap");
    expect(me.status).toBe(200);
    const { principal } = (await me.json()) as { principal: { id: string; email: string } };
    expect(principal).toMatchObject({
      id: derivePrincipalId(issuer.issuer, "alice"),
      email: "alice@example.test",
    });
  });
});
