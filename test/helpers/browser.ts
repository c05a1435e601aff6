import { existsSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { type Browser, type BrowserContext, chromium, type Page, type Response } from "playwright-core";

/**
 * Debian's Chromium (scripts/ensure-browser.mjs installs it). Playwright never downloads a
 * browser of its own here: this executable is the only one it launches.
 */
export const CHROMIUM_PATH = process.env.ATRIUM_CHROMIUM ?? "/usr/bin/chromium";

const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/**
 * Headless Chromium; give each test its own newLoopbackContext() so no cookie leaks between
 * tests. `extraArgs` add command-line switches (a host-resolver rule, say).
 */
export async function launchChromium(extraArgs: string[] = []): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`No Chromium at ${CHROMIUM_PATH}: run \`node scripts/ensure-browser.mjs\` (as root).`);
  }
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS, ...extraArgs] });
}

/**
 * A fresh browser context (its own cookies) that reaches only loopback addresses: anything
 * else a page asks for (the provider's login page imports a web font) is aborted, so no
 * test sends a byte off this machine.
 */
export async function newLoopbackContext(browser: Browser): Promise<BrowserContext> {
  const context = await browser.newContext();
  await context.route(
    (url) => !LOOPBACK_HOSTS.has(url.hostname),
    (route) => route.abort("blockedbyclient"),
  );
  return context;
}

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]"]);

/** Where the browser came to rest after the provider's pages, and the status of that page. */
export interface Landing {
  url: URL;
  status: number;
}

const MAX_PROVIDER_PAGES = 6;

/**
 * Opens `startUrl` and answers the provider's development login (`input[name=login]`, any
 * password) and consent pages until the browser is sent somewhere `isDone` accepts. Works
 * whether or not the provider still has a session or a grant (pages it skips are not
 * waited for).
 */
export async function passProviderPages(
  page: Page,
  startUrl: string,
  login: string,
  isDone: (url: URL) => boolean,
): Promise<Landing> {
  let status = 0;
  const onResponse = (response: Response) => {
    if (response.request().isNavigationRequest() && response.frame() === page.mainFrame()) {
      status = response.status();
    }
  };
  page.on("response", onResponse);
  try {
    await page.goto(startUrl);
    for (let step = 0; step <= MAX_PROVIDER_PAGES; step++) {
      const url = new URL(page.url());
      if (isDone(url)) return { url, status };
      const before = page.url();
      if ((await page.locator('input[name="login"]').count()) > 0) {
        await page.fill('input[name="login"]', login);
        await page.fill('input[name="password"]', "any password");
        await page.click('button[type="submit"]');
      } else if ((await page.locator('button[type="submit"]').count()) > 0) {
        await page.click('button[type="submit"]');
      } else {
        throw new Error(`stuck at ${before}: ${(await page.textContent("body"))?.trim().slice(0, 500)}`);
      }
      await page.waitForURL((next) => next.href !== before, { waitUntil: "load" });
    }
    throw new Error(`still at the provider after ${MAX_PROVIDER_PAGES} pages: ${page.url()}`);
  } finally {
    page.off("response", onResponse);
  }
}

/**
 * Starts Atrium's /auth/login in `page` and signs in at the provider as `login`; returns
 * the Atrium page the browser lands on (the return path, or an error page at the callback).
 */
export async function attemptSignIn(
  page: Page,
  atriumUrl: string,
  login: string,
  returnTo?: string,
): Promise<Landing> {
  const atrium = new URL(atriumUrl).origin;
  const query = returnTo === undefined ? "" : `?return_to=${encodeURIComponent(returnTo)}`;
  return passProviderPages(page, `${atriumUrl}/auth/login${query}`, login, (url) => url.origin === atrium);
}

/**
 * Signs `login` in to the Atrium at `atriumUrl` through its identity provider in a real
 * browser, leaving the session cookie in the page's context. Throws, with the page's text,
 * when sign-in did not land back on Atrium signed in.
 */
export async function signInWithBrowser(
  page: Page,
  atriumUrl: string,
  login: string,
  returnTo?: string,
): Promise<void> {
  const landing = await attemptSignIn(page, atriumUrl, login, returnTo);
  if (landing.url.pathname === "/auth/callback" || landing.status >= 400) {
    const text = (await page.textContent("body"))?.trim().slice(0, 500);
    throw new Error(`sign-in as ${login} ended at ${landing.url.pathname} (${landing.status}): ${text}`);
  }
}

/**
 * A redirect URI on 127.0.0.1 that answers every request with a plain page, for an OAuth
 * client the test plays itself: the code arrives in the URL the browser lands on. `received()`
 * lists the URLs (path and query) that reached it, so a test can tell a held response from a
 * delivered one.
 */
export async function startRedirectCatcher(): Promise<{
  redirectUri: string;
  received(): string[];
  close(): Promise<void>;
}> {
  const received: string[] = [];
  const server = createServer((request, response) => {
    received.push(request.url ?? "");
    response.writeHead(200, { "content-type": "text/plain" });
    response.end("redirect received");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    redirectUri: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`,
    received: () => [...received],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
