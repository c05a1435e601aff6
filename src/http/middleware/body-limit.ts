import type { MiddlewareHandler } from "hono";
import { bodyLimit as honoBodyLimit } from "hono/body-limit";
import { PayloadTooLarge } from "../../errors.ts";
import type { AppEnv } from "../../web/app-env.ts";
import { closeAfterAnswer } from "../lingering-close.ts";

export interface BodyLimits {
  /** Bodies read whole (JSON REST, MCP). */
  maxBodyBytes: number;
  /**
   * The limit of a body its route streams to disk (a file upload), or undefined for any other
   * request. The route counts what it reads against it; here only the declared length is checked.
   */
  streamedLimit: (path: string, method: string) => number | undefined;
  /**
   * Whether a path answers its own 413 (the public OAuth endpoints: the OAuth error shape, with
   * CORS). Its body is then capped by its route, at the lower of `maxBodyBytes` and the route's
   * own limit, so the refusal is in the route's words; this only passes the instance's cap on.
   */
  capsItsOwnBody: (path: string) => boolean;
}

const DECIMAL = /^\d+$/;

/**
 * The body's size as the request's head declares it (a Content-Length and no Transfer-Encoding),
 * or undefined when it must be counted as it is read. Shared with the MCP front door (http/mcp-front-door.ts), so both read a head alike.
 */
export function declaredLength(
  contentLength: string | undefined,
  transferEncoding: string | undefined,
): number | undefined {
  return contentLength !== undefined && DECIMAL.test(contentLength) && !transferEncoding
    ? Number(contentLength)
    : undefined;
}

/**
 * Caps request bodies, before authentication. A body whose declared Content-Length is over
 * its limit is refused with 413 before a byte of it is read; a body without one (chunked) is
 * counted as it is read. Every 413, whoever answers it, ends the connection with a lingering
 * close, so the client reads the answer instead of a reset (lingering-close.ts).
 */
export function bodyLimit(limits: BodyLimits): MiddlewareHandler<AppEnv> {
  const counted = honoBodyLimit({
    maxSize: limits.maxBodyBytes,
    onError: () => {
      throw new PayloadTooLarge(limits.maxBodyBytes);
    },
  });
  return async (c, next) => {
    if (limits.capsItsOwnBody(c.req.path)) {
      c.set("maxBodyBytes", limits.maxBodyBytes);
      await next();
      if (c.res.status === 413) closeAfterAnswer(c);
      return;
    }
    const streamed = limits.streamedLimit(c.req.path, c.req.method);
    const maxBytes = streamed ?? limits.maxBodyBytes;
    try {
      const declared = declaredLength(c.req.header("content-length"), c.req.header("transfer-encoding"));
      const isDeclared = declared !== undefined;
      if (isDeclared && declared > maxBytes) throw new PayloadTooLarge(maxBytes);
      // A declared length within the limit is all there is to check (the server reads no more
      // than it). Only a body without one is counted as it streams in; hono's counter builds the
      // request's web stream to do so, which costs a tenth of an MCP call's CPU (docs/performance.md).
      await (streamed === undefined && !isDeclared ? counted(c, next) : next());
    } catch (error) {
      if (error instanceof PayloadTooLarge) closeAfterAnswer(c);
      throw error;
    }
    // A 413 from further in: a streamed upload past its limit, an OAuth endpoint's own cap.
    if (c.res.status === 413) closeAfterAnswer(c);
  };
}
