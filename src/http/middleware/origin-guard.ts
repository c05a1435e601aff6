import type { MiddlewareHandler } from "hono";
import { isLoopbackHost } from "../../instance/load.ts";
import type { AppEnv } from "../../web/app-env.ts";
import { errorBody } from "../error-response.ts";

/** Why a request's Host or Origin is refused: the REST envelope a 403 carries. */
export type OriginRefusal = ReturnType<typeof errorBody>;

/** The check itself, shared by this middleware and the MCP front door (http/mcp-front-door.ts). */
export type OriginCheck = (
  host: string | undefined,
  origin: string | undefined,
  path: string,
) => OriginRefusal | undefined;

/**
 * DNS-rebinding protection. A browser page on a foreign name that resolves to this host
 * sends its own name in Host and Origin; both must be this instance's public host or a
 * loopback name. A request without Origin (a non-browser client) passes the Origin check,
 * and so do the paths `anyOrigin` names: endpoints that read no cookie, so a foreign page
 * gains nothing by calling them.
 */
export function originCheck(publicUrl: () => string, anyOrigin: (path: string) => boolean): OriginCheck {
  // Parsed once per public URL (it changes only when the listener binds), not per request.
  let parsedFrom = "";
  let publicAuthority = new URL("http://localhost");
  let publicOrigin = "";
  return (host, origin, path) => {
    if (parsedFrom !== publicUrl()) {
      parsedFrom = publicUrl();
      publicAuthority = new URL(parsedFrom);
      publicOrigin = publicAuthority.origin;
    }
    if (host !== undefined && !allowedHost(host, publicAuthority)) {
      return errorBody("forbidden_host", `Requests for host "${host}" are not served here.`);
    }
    if (origin !== undefined && !anyOrigin(path) && !allowedOrigin(origin, publicOrigin)) {
      return errorBody("forbidden_origin", `Requests from origin "${origin}" are not accepted.`);
    }
    return undefined;
  };
}

/** The hono middleware for every route but the front door's: a refusal is a 403. */
export function originGuard(check: OriginCheck): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const refusal = check(c.req.header("host"), c.req.header("origin"), c.req.path);
    if (refusal) return c.json(refusal, 403);
    await next();
  };
}

/**
 * `Host` is `uri-host [":" port]` (RFC 9110 §7.2): no userinfo, path, query or fragment, which
 * the URL parser would otherwise strip and then judge what is left (`evil@localhost`).
 */
const HOST_FIELD = /^(?:\[[0-9A-Fa-f:.]+\]|[^\s@/\\?#[\]:]+)(?::[0-9]*)?$/;

/**
 * Whether `host` names the public URL's authority, or a loopback one. Compared as HTTP compares
 * them (RFC 9110 §4.2.3, RFC 3986 §6.2.2–3): the name is case-insensitive and the scheme's default
 * port, explicit or not, is the same port; a behind-a-proxy `Host: Atrium.Example.COM:443` for
 * `https://atrium.example.com` was refused byte for byte (test/integration/host-header.test.ts).
 * A trailing dot stays another name: to a browser it is another origin, with its own cookies.
 */
function allowedHost(host: string, publicUrl: URL): boolean {
  if (!HOST_FIELD.test(host)) return false;
  let given: URL;
  try {
    given = new URL(`${publicUrl.protocol}//${host}`);
  } catch {
    return false;
  }
  return given.host === publicUrl.host || isLoopbackHost(given.hostname);
}

function allowedOrigin(origin: string, publicOrigin: string): boolean {
  if (origin === publicOrigin) return true;
  try {
    const url = new URL(origin);
    return (url.protocol === "http:" || url.protocol === "https:") && isLoopbackHost(url.hostname);
  } catch {
    return false;
  }
}
