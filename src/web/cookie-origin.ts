import { Forbidden } from "../errors.ts";

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * A request that an ambient credential authenticates may change something only when it comes
 * from Atrium's own pages. Ambient means the browser attaches it to any page's request by
 * itself: the session cookie, and under `dev` no credential at all (the developer). The
 * origin guard lets any loopback origin through (a local MCP Inspector is a legitimate
 * caller), and SameSite=Lax cookies reach every port of a host, so without this a page on
 * another local port could act as the signed-in person or the developer with a CORS-simple
 * request (ADR 0026). Browsers send `Origin` with every non-GET request; a client with no
 * `Origin` (curl, an SDK) is not a browser page.
 */
export function checkCookieOrigin(
  request: Request,
  publicUrl: string,
  credential = "A browser session",
): void {
  if (SAFE_METHODS.has(request.method)) return;
  const origin = request.headers.get("origin");
  if (origin !== null && origin !== new URL(publicUrl).origin) {
    throw new Forbidden(
      `${credential} acts only from Atrium's own pages; this request came from ${origin.slice(0, 100)}.`,
    );
  }
}
