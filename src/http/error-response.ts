import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { AtriumError, InsufficientScope, Unauthenticated } from "../errors.ts";
import type { Logger } from "../log.ts";
import { InvalidPathSegment } from "../storage/paths.ts";
import type { AppEnv } from "../web/app-env.ts";

export const INTERNAL_ERROR_MESSAGE =
  "Atrium hit an unexpected error; the request changed nothing it reported.";

/** The one REST error envelope: `{"error":{"code","message"}}` with the right status. */
export function errorBody(code: string, message: string): { error: { code: string; message: string } } {
  return { error: { code, message } };
}

/** Maps any error to the envelope; only an unexpected one is logged, with its request id. */
export function errorHandler(log: Logger): (error: unknown, c: Context<AppEnv>) => Response {
  return (error, c) => errorResponse(error, c, log);
}

function errorResponse(error: unknown, c: Context<AppEnv>, log: Logger): Response {
  if (error instanceof AtriumError) {
    const headers: Record<string, string> = {};
    if (error instanceof Unauthenticated || error instanceof InsufficientScope) {
      headers["www-authenticate"] = error.challenge;
    }
    return c.json(errorBody(error.code, error.message), error.status as ContentfulStatusCode, headers);
  }
  if (error instanceof InvalidPathSegment) {
    // A path segment that fails its grammar names nothing that exists.
    return c.json(errorBody("not_found", "Nothing exists at that address."), 404);
  }
  log.error({ err: error, requestId: c.get("requestId") }, "unhandled error");
  return c.json(errorBody("internal_error", INTERNAL_ERROR_MESSAGE), 500);
}
