// Which redirect URIs a client may register, and when a presented one matches (OAuth 2.1
// §2.3, RFC 8252 §7 for native apps). Pinned by test/unit/oauth/redirect-uris.test.ts.

const MAX_REDIRECT_URI_CHARS = 2048;
const LOOPBACK_HOSTS = ["127.0.0.1", "[::1]", "localhost"];
// Only IP literals get the any-port rule: `localhost` can be resolved to something else.
const LOOPBACK_IP_HOSTS = ["127.0.0.1", "[::1]"];
const DANGEROUS_SCHEMES = ["javascript:", "data:", "file:", "vbscript:", "blob:", "about:"];

/** A problem with `uri` as a redirect URI, or `undefined` when it is acceptable. */
export function validateRedirectUri(uri: string): string | undefined {
  if (uri.length > MAX_REDIRECT_URI_CHARS) {
    return `is longer than ${MAX_REDIRECT_URI_CHARS} characters`;
  }
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return "is not an absolute URL";
  }
  if (uri.includes("#")) return "must not contain a fragment";
  if (DANGEROUS_SCHEMES.includes(url.protocol)) return `must not use the ${url.protocol} scheme`;
  if (url.username !== "" || url.password !== "") return "must not contain a user name or password";
  if (url.protocol === "https:") return url.hostname === "" ? "has no host" : undefined;
  if (url.protocol === "http:") {
    return LOOPBACK_HOSTS.includes(url.hostname)
      ? undefined
      : "may use http only on a loopback host (127.0.0.1, [::1] or localhost); use https";
  }
  // RFC 8252 §7.1: a private-use scheme is a reversed domain name the app controls.
  if (!url.protocol.slice(0, -1).includes(".")) {
    return `uses the scheme ${url.protocol} which is neither https nor a reversed domain name like com.example.app:`;
  }
  return undefined;
}

/**
 * Where a redirect URI sends the browser, as the consent page tells the person. An https
 * URI goes to its host, and an http one (only ever loopback) to an application on this
 * computer. Any other goes to whichever app opens its scheme: the page names the scheme
 * and the whole URI, never the authority alone, which anyone can pick to look like a
 * website (`com.evil.app://claude.ai/cb` was shown as "claude.ai"). Only for a URI
 * validateRedirectUri accepted.
 */
export function describeRedirectUri(uri: string): string {
  const url = new URL(uri);
  if (url.protocol === "https:") return url.host;
  if (url.protocol === "http:") return `${url.host}, an application on this computer`;
  return `the app that opens ${url.protocol} links (${url.href})`;
}

/**
 * The form a redirect URI is stored in: WHATWG URL serialisation (lower-case scheme and
 * host, no default port, dot segments resolved), so `HTTPS://Example.COM:443/cb` is stored
 * as `https://example.com/cb`. Only for a URI validateRedirectUri accepted.
 */
export function canonicalRedirectUri(uri: string): string {
  return new URL(uri).href;
}

/**
 * Whether `presented` is one of `registered`: the exact string, except that an http
 * redirect URI on a loopback IP literal matches at any port (RFC 8252 §7.3), because a
 * native app picks a free port each time it listens.
 */
export function redirectUriMatches(registered: readonly string[], presented: string): boolean {
  if (registered.includes(presented)) return true;
  const wanted = withoutPort(presented);
  return wanted !== undefined && registered.some((uri) => withoutPort(uri) === wanted);
}

/** A loopback-IP http URI with its port removed, or `undefined` for any other URI. */
function withoutPort(uri: string): string | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return undefined;
  }
  if (url.protocol !== "http:" || !LOOPBACK_IP_HOSTS.includes(url.hostname)) return undefined;
  // Only a URI already in canonical form: otherwise "the same but for the port" would also
  // let normalisation (dot segments, case, escapes) change what is compared.
  if (url.href !== uri || url.username !== "" || url.password !== "" || url.hash !== "") return undefined;
  url.port = "";
  return url.href;
}
