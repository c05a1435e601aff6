import type { MiddlewareHandler } from "hono";
import { cors } from "hono/cors";

// The endpoints a browser-based MCP client on another origin calls before it has any
// credential. They answer CORS for any origin, never with credentials, and the app skips
// its Origin check for exactly these paths. /oauth/authorize is not one of them: it is a
// page a person uses, and keeps the app's protections.

const PUBLIC_PATHS = new Set([
  "/.well-known/oauth-authorization-server",
  "/oauth/jwks",
  "/oauth/register",
  "/oauth/token",
  "/oauth/revoke",
]);
const PROTECTED_RESOURCE_PATH = /^\/\.well-known\/oauth-protected-resource\/mcp\/[^/]+$/;

export const CORS_ALLOWED_HEADERS = ["Authorization", "Content-Type", "MCP-Protocol-Version"];
const CORS_MAX_AGE_SECONDS = 24 * 60 * 60;

/** Whether `path` is one of the public OAuth endpoints (so the app's Origin check does not apply). */
export function isOAuthPublicPath(path: string): boolean {
  return PUBLIC_PATHS.has(path) || PROTECTED_RESOURCE_PATH.test(path);
}

/**
 * The public endpoints that read a body, each under a cap of its own (`oauthBodyLimit`) that
 * answers `413` in the OAuth shape: the instance's cap leaves these alone. The metadata GETs read
 * none and keep the instance's cap: skipped too, a large POST there was drained up to 64 MiB and
 * answered `404` instead of the `413` its declared length earns.
 */
const OWN_BODY_CAP_PATHS = new Set(["/oauth/register", "/oauth/token", "/oauth/revoke"]);

/** Whether `path` is a public OAuth endpoint that caps, and refuses, its own body. */
export function capsItsOwnOAuthBody(path: string): boolean {
  return OWN_BODY_CAP_PATHS.has(path);
}

/** CORS for the public endpoints: any origin, no credentials, the headers an MCP client sends. */
export function publicCors(): MiddlewareHandler {
  return cors({
    origin: "*",
    allowMethods: ["GET", "POST", "OPTIONS"],
    allowHeaders: CORS_ALLOWED_HEADERS,
    maxAge: CORS_MAX_AGE_SECONDS,
  });
}
