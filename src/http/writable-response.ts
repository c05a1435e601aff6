import { validateHeaderName, validateHeaderValue } from "node:http";
import type { Logger } from "../log.ts";
import { errorBody, INTERNAL_ERROR_MESSAGE } from "./error-response.ts";

type Fetch = (request: Request, env: unknown) => Response | Promise<Response>;

const REQUEST_ID_HEADER = "x-request-id";

/**
 * Wraps the app's fetch so that every response reaches the Node adapter in a shape Node can
 * write. When `writeHead` throws (a header value with a control character, a status outside
 * what HTTP allows), @hono/node-server prints the raw stack with `console.error`, bypassing
 * the JSON log, and sends a text/plain 500 that names the error. Here such a response is
 * replaced, before the adapter sees it, by the REST envelope's 500, and the reason is logged
 * through pino with the request id (test/unit/http/writable-response.test.ts). Checking a
 * head costs a few header lookups; nothing reads the body, which would materialise it.
 */
export function writableResponses(fetch: Fetch, log: Logger): Fetch {
  return async (request, env) => {
    let response: Response;
    try {
      response = await fetch(request, env);
    } catch (error) {
      // hono maps errors through app.onError, so only a failure there lands here.
      log.error({ err: error }, "request failed outside the error handler");
      return internalError(undefined);
    }
    const problem = headProblem(response);
    if (problem === undefined) return response;
    const requestId = response.headers.get(REQUEST_ID_HEADER) ?? undefined;
    log.error({ err: problem, requestId, status: response.status }, "response could not be sent as built");
    await releaseBody(response);
    return internalError(requestId);
  };
}

/** Why Node's `writeHead` would refuse this response, or undefined when it would not. */
function headProblem(response: Response): Error | undefined {
  const { status } = response;
  if (!Number.isInteger(status) || status < 200 || status > 599) {
    return new RangeError(`Response status ${status} is not a final HTTP status (200-599).`);
  }
  try {
    for (const [name, value] of response.headers) {
      validateHeaderName(name);
      validateHeaderValue(name, value);
    }
  } catch (error) {
    return error as Error;
  }
  return undefined;
}

/** Lets go of a body that will not be sent (an open file, say); reading `body` may itself throw. */
async function releaseBody(response: Response): Promise<void> {
  try {
    await response.body?.cancel();
  } catch {
    // Nothing was opened that could be released.
  }
}

function internalError(requestId: string | undefined): Response {
  return Response.json(errorBody("internal_error", INTERNAL_ERROR_MESSAGE), {
    status: 500,
    headers: requestId === undefined ? {} : { [REQUEST_ID_HEADER]: requestId },
  });
}
