import type { MiddlewareHandler } from "hono";
import { isLoopbackHost } from "../../instance/load.ts";
import type { AppEnv } from "../../web/app-env.ts";
import { errorBody } from "../error-response.ts";

/**
 * DNS-rebinding protection. A browser page on a foreign name that resolves to this host
 * sends its own name in Host and Origin; both must be this instance's public host or a
 * loopback name. A request without Origin (a non-browser client) passes the Origin check,
 * and so do the paths `anyOrigin` names: endpoints that read no cookie, so a foreign page
 * gains nothing by calling them.
 */
export function originGuard(
  publicUrl: () => string,
  anyOrigin: (path: string) => boolean,
): MiddlewareHandler<AppEnv> {
  // Parsed once per public URL (it changes only when the listener binds), not per request.
  let parsedFrom = "";
  let publicHost = "";
  let publicOrigin = "";
  return async (c, next) => {
    if (parsedFrom !== publicUrl()) {
      parsedFrom = publicUrl();
      const url = new URL(parsedFrom);
      publicHost = url.host;
      publicOrigin = url.origin;
    }
    const host = c.req.header("host");
    if (host !== undefined && !allowedHost(host, publicHost)) {
      return c.json(errorBody("forbidden_host", `Requests for host "${host}" are not served here.`), 403);
    }
    const origin = c.req.header("origin");
    if (origin !== undefined && !anyOrigin(c.req.path) && !allowedOrigin(origin, publicOrigin)) {
      return c.json(errorBody("forbidden_origin", `Requests from origin "${origin}" are not accepted.`), 403);
    }
    await next();
  };
}

function allowedHost(host: string, publicHost: string): boolean {
  if (host === publicHost) return true;
  try {
    return isLoopbackHost(new URL(`http://${host}`).hostname);
  } catch {
    return false;
  }
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
