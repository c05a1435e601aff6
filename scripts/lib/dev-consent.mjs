// The person in front of the browser, for the suite's `authorization-code-grant` scenario: it
// prints an authorization URL for a human to open and waits for the redirect to its callback.
// Under `dev` sign-in is implicit but consent is still asked (docs/oauth.md), so this follows
// the redirects through /auth/login with a cookie jar, approves the consent page as a browser
// would (same-origin form POST), and delivers the redirect to the suite's callback.

import { fetchWithTimeout, ScriptError } from "./dev-atrium.mjs";

const MAX_HOPS = 10;

/**
 * @param {string} authorizationUrl what the suite printed
 * @param {string} base Atrium's public URL (the only origin this follows redirects on)
 * @returns {Promise<string>} the callback URL it delivered
 */
export async function approveAsDeveloper(authorizationUrl, base) {
  const jar = new Map();
  const cookie = () => [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
  const keep = (res) => {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const eq = pair.indexOf("=");
      if (eq > 0) jar.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
    }
  };
  const get = async (url) => {
    const res = await fetchWithTimeout(url, 10_000, {
      redirect: "manual",
      headers: { accept: "text/html", cookie: cookie() },
    });
    keep(res);
    return res;
  };

  let url = new URL(authorizationUrl);
  let page;
  for (let hop = 0; ; hop++) {
    if (url.origin !== base)
      throw new ScriptError(`the authorization flow left Atrium before consent, for ${url.href}`);
    if (hop === MAX_HOPS) throw new ScriptError(`more than ${MAX_HOPS} redirects from ${authorizationUrl}`);
    const res = await get(url.href);
    if (res.status >= 300 && res.status < 400) {
      url = new URL(res.headers.get("location") ?? "", url);
      await res.arrayBuffer();
      continue;
    }
    page = await res.text();
    if (res.status !== 200)
      throw new ScriptError(
        `GET ${url.pathname} answered ${res.status} instead of a consent page: ${page.slice(0, 300)}`,
      );
    break;
  }
  const request = /name="request" value="([^"]+)"/.exec(page)?.[1];
  if (!request) throw new ScriptError(`no consent form on ${url.pathname}: ${page.slice(0, 300)}`);

  const decision = await fetchWithTimeout(`${base}/oauth/authorize`, 10_000, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: cookie(), origin: base, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ request, decision: "approve" }).toString(),
  });
  const location = decision.headers.get("location");
  const body = await decision.text();
  if (decision.status !== 303 || !location)
    throw new ScriptError(`approving consent answered ${decision.status}: ${body.slice(0, 300)}`);
  const callback = await fetchWithTimeout(location, 10_000);
  await callback.arrayBuffer();
  if (callback.status !== 200)
    throw new ScriptError(`the suite's callback ${new URL(location).origin} answered ${callback.status}`);
  return location;
}
