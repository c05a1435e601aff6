import type { Page } from "playwright-core";
import { type Landing, passProviderPages } from "./browser.ts";

export type { Landing };

export interface ConsentOptions {
  /** The authorization server's issuer: every page on its origin is a provider page to answer. */
  issuer: string;
  /** Who signs in at the provider (any login; the development pages take any password). */
  login: string;
}

/**
 * Opens `goUrl` (Atrium's `go_url`, or an authorization URL) in `page`, signs in and consents at
 * the authorization server, and returns the first page off the provider's origin the browser
 * lands on (Atrium's callback answer, or an error page) with its status. Pages the provider skips
 * (a live session, an existing grant) are not waited for.
 */
export function authorizeInBrowser(page: Page, goUrl: string, options: ConsentOptions): Promise<Landing> {
  const provider = new URL(options.issuer).origin;
  return passProviderPages(page, goUrl, options.login, (url) => url.origin !== provider);
}

const HELD_PAGE = "authorization response held by the test";

/**
 * Like authorizeInBrowser, but the authorization response (the redirect carrying `code` or
 * `error`) is held, not delivered: the browser shows a placeholder at that URL and the URL is
 * returned. Deliver it later with deliverCallback — in the same page, so the browser-binding
 * cookie goes with it — e.g. two tabs' callbacks at once, or one after a newer flow activated.
 *
 * Chromium's own request interception (CDP `Fetch`), not Playwright's `page.route`: the response
 * is the last hop of a redirect chain (consent POST → 303 → 303 to the redirect URI), and
 * `page.route` is not consulted for redirect targets, so the callback would reach the server.
 */
export async function authorizeUntilCallback(
  page: Page,
  goUrl: string,
  options: ConsentOptions,
): Promise<URL> {
  const provider = new URL(options.issuer).origin;
  const isResponse = (url: URL) =>
    url.origin !== provider && (url.searchParams.has("code") || url.searchParams.has("error"));
  let held: URL | undefined;
  const cdp = await page.context().newCDPSession(page);
  cdp.on("Fetch.requestPaused", (event: { requestId: string; request: { url: string } }) => {
    const url = new URL(event.request.url);
    if (held !== undefined || !isResponse(url)) {
      void cdp.send("Fetch.continueRequest", { requestId: event.requestId });
      return;
    }
    held = url;
    void cdp.send("Fetch.fulfillRequest", {
      requestId: event.requestId,
      responseCode: 200,
      responseHeaders: [{ name: "content-type", value: "text/plain" }],
      body: Buffer.from(HELD_PAGE).toString("base64"),
    });
  });
  // Only URLs that can be a response are paused; the handler still checks the origin.
  await cdp.send("Fetch.enable", { patterns: [{ urlPattern: "*code=*" }, { urlPattern: "*error=*" }] });
  try {
    const landing = await passProviderPages(
      page,
      goUrl,
      options.login,
      (url) => url.origin !== provider || held !== undefined,
    );
    if (held === undefined) {
      const text = (await page.textContent("body"))?.trim().slice(0, 300);
      throw new Error(
        `no authorization response: the browser landed at ${landing.url.href} (${landing.status}): ${text}`,
      );
    }
    return held;
  } finally {
    await cdp.send("Fetch.disable");
    await cdp.detach();
  }
}

/** Delivers a held authorization response in `page` and returns where the browser ends up. */
export async function deliverCallback(page: Page, callback: URL): Promise<Landing & { text: string }> {
  const response = await page.goto(callback.href);
  return {
    url: new URL(page.url()),
    status: response?.status() ?? 0,
    text: (await page.textContent("body"))?.trim() ?? "",
  };
}
