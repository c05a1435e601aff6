import type { Context, Handler, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { Logger } from "../../log.ts";
import { refusedForStorage } from "../../storage/storage-full.ts";
import type { AppEnv } from "../../web/app-env.ts";
import { jsonBoundsProblem } from "../../web/json-bounds.ts";
import { OAuthError } from "../oauth-error.ts";

// How the OAuth endpoints speak HTTP: RFC 6749 §5.2 error bodies rather than Atrium's
// envelope, no caching of anything with a token in it, and bodies read defensively so no
// input makes them crash.

export const NO_STORE = { "cache-control": "no-store", pragma: "no-cache" } as const;

/**
 * When a client is told to try again after a full disk refused a write: nobody knows when an
 * operator will free space, so a short wait that costs a client little (adr/0165).
 */
const STORAGE_FULL_RETRY_AFTER_SECONDS = 60;

/**
 * The connecting address, which the per-address limits count (behind a proxy, the
 * proxy's: oauth.registrationsPerHour and oauth.clientMetadataFetchesPerHour say so).
 */
export function callerAddress(c: Context<AppEnv>): string {
  const incoming = (c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming;
  return incoming?.socket?.remoteAddress ?? "unknown";
}

/** A request body's parameters; an empty value counts as absent (RFC 6749 §3.1). */
export interface FormParams {
  get(name: string): string | undefined;
  require(name: string): string;
}

/** Runs an OAuth endpoint, answering any error as an OAuth error response. */
export function oauthEndpoint(
  log: Logger,
  handle: (c: Context<AppEnv>) => Promise<Response>,
): Handler<AppEnv> {
  return async (c) => {
    try {
      return await handle(c);
    } catch (error) {
      return oauthErrorResponse(c, error, log);
    }
  };
}

export function oauthErrorResponse(c: Context<AppEnv>, error: unknown, log: Logger): Response {
  const headers: Record<string, string> = { ...NO_STORE };
  let oauth: OAuthError;
  if (error instanceof OAuthError) {
    oauth = error;
  } else if (refusedForStorage(error, log, { requestId: c.get("requestId") })) {
    // RFC 6749 has no 507: its code for a server that cannot serve now, with the 503 it stands
    // for, tells a client to try again rather than that it is broken (adr/0165).
    headers["retry-after"] = String(STORAGE_FULL_RETRY_AFTER_SECONDS);
    oauth = new OAuthError(
      "temporarily_unavailable",
      "The authorization server's storage is full, so nothing was stored; try again once space has been freed.",
    );
  } else {
    log.error({ err: error, requestId: c.get("requestId") }, "unexpected error at an OAuth endpoint");
    oauth = new OAuthError("server_error", "The authorization server hit an unexpected error; try again.");
  }
  // RFC 6749 §5.2: a client that tried Basic is told Basic is the way.
  if (oauth.errorCode === "invalid_client" && /^basic\s/i.test(c.req.header("authorization") ?? "")) {
    headers["www-authenticate"] = 'Basic realm="atrium", charset="UTF-8"';
  }
  return c.json(oauth.toResponseObject(), oauth.status, headers);
}

/**
 * Caps a body before it is read, answering with an OAuth error rather than the app's envelope: at
 * `maxBytes`, or the instance's `http.maxBodyBytes` where that is lower, which the app's own body
 * limit leaves to this (http/middleware/body-limit.ts), so the 413 is in the OAuth shape, with CORS.
 */
export function oauthBodyLimit(maxBytes: number): MiddlewareHandler<AppEnv> {
  return (c, next) => {
    const cap = Math.min(maxBytes, c.get("maxBodyBytes") ?? maxBytes);
    return bodyLimit({
      maxSize: cap,
      onError: (c) =>
        c.json(
          new OAuthError("invalid_request", `The body is larger than ${cap} bytes.`).toResponseObject(),
          413,
          NO_STORE,
        ),
    })(c, next);
  };
}

/**
 * Reads an application/x-www-form-urlencoded body; a repeated parameter is refused (RFC 6749 §3.2)
 * with invalid_request, or with the error `repeatable` makes for it: one RFC 8707 §2 lets a client
 * repeat (`resource`) is refused for what it asks, not as malformed.
 */
export async function readForm(
  c: Context<AppEnv>,
  repeatable: Readonly<Record<string, () => OAuthError>> = {},
): Promise<FormParams> {
  if (mediaType(c) !== "application/x-www-form-urlencoded") {
    throw new OAuthError("invalid_request", "The body must be sent as application/x-www-form-urlencoded.");
  }
  const params = new URLSearchParams(await c.req.text());
  const seen = new Set<string>();
  for (const name of params.keys()) {
    if (seen.has(name)) {
      throw (
        repeatable[name]?.() ??
        new OAuthError("invalid_request", `The ${name.slice(0, 64)} parameter is repeated.`)
      );
    }
    seen.add(name);
  }
  const get = (name: string): string | undefined => {
    const value = params.get(name);
    return value === null || value === "" ? undefined : value;
  };
  return {
    get,
    require(name) {
      const value = get(name);
      if (value === undefined) throw new OAuthError("invalid_request", `The ${name} parameter is required.`);
      return value;
    },
  };
}

/** Reads an application/json body as a value; what it must contain is the caller's concern. */
export async function readJson(c: Context<AppEnv>): Promise<unknown> {
  if (mediaType(c) !== "application/json") {
    throw new OAuthError("invalid_request", "The body must be sent as application/json.");
  }
  const text = await c.req.text();
  const tooCostly = jsonBoundsProblem(text);
  if (tooCostly) throw new OAuthError("invalid_request", `The body ${tooCostly}.`);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new OAuthError("invalid_request", "The body is not valid JSON.");
  }
}

function mediaType(c: Context<AppEnv>): string {
  return (c.req.header("content-type") ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
}
