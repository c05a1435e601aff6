import type { HttpBindings } from "@hono/node-server";
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { AtriumError, ClientClosedRequest, InsufficientScope, Unauthenticated } from "../errors.ts";
import type { Logger } from "../log.ts";
import { InvalidPathSegment } from "../storage/paths.ts";
import { refusedForStorage } from "../storage/storage-full.ts";
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

/** An error as the HTTP answer it becomes: status, REST envelope and any challenge header. */
export interface ErrorReply {
  status: number;
  body: ReturnType<typeof errorBody>;
  headers: Record<string, string>;
}

/**
 * The one mapping of an error to its answer, for hono's error handler and for the MCP front door
 * (http/mcp-front-door.ts) alike; only an unexpected error is logged, with its request id. A write
 * any store could not make on a full disk is answered 507, with a warning (storage-full.ts).
 */
export function errorReply(thrown: unknown, log: Logger, requestId: string | undefined): ErrorReply {
  const error = refusedForStorage(thrown, log, { requestId }) ?? thrown;
  if (error instanceof AtriumError) {
    const headers: Record<string, string> = {};
    if (error instanceof Unauthenticated || error instanceof InsufficientScope) {
      headers["www-authenticate"] = error.challenge;
    }
    return { status: error.status, body: errorBody(error.code, error.message), headers };
  }
  if (error instanceof InvalidPathSegment) {
    // A path segment that fails its grammar names nothing that exists.
    return { status: 404, body: errorBody("not_found", "Nothing exists at that address."), headers: {} };
  }
  log.error({ err: error, requestId }, "unhandled error");
  return { status: 500, body: errorBody("internal_error", INTERNAL_ERROR_MESSAGE), headers: {} };
}

function errorResponse(error: unknown, c: Context<AppEnv>, log: Logger): Response {
  // A body cut off because its client went away fails whatever was reading it: that is the
  // client's leaving (499), not Atrium's failure, and it is not logged as one.
  const incoming = (c.env as Partial<HttpBindings> | undefined)?.incoming;
  const cut = incoming !== undefined && !incoming.complete && incoming.destroyed;
  const reply = errorReply(cut ? new ClientClosedRequest() : error, log, c.get("requestId"));
  return c.json(reply.body, reply.status as ContentfulStatusCode, reply.headers);
}
