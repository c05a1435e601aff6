import { Forbidden } from "../errors.ts";

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * A request that a browser's session cookie authenticates may change something only when
 * it comes from Atrium's own pages. The origin guard lets any loopback origin through (a
 * local MCP Inspector is a legitimate caller), and SameSite=Lax cookies reach every port of
 * a host, so without this a page on another local port could act as the signed-in person.
 * Browsers send `Origin` with every non-GET request; a client with no `Origin` is not a
 * browser page.
 */
export function checkCookieOrigin(request: Request, publicUrl: string): void {
  if (SAFE_METHODS.has(request.method)) return;
  const origin = request.headers.get("origin");
  if (origin !== null && origin !== new URL(publicUrl).origin) {
    throw new Forbidden(
      `A browser session acts only from Atrium's own pages; this request came from ${origin.slice(0, 100)}.`,
    );
  }
}
