import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../../web/app-env.ts";

/**
 * hono answers a `HEAD` with the `GET` route and then drops the response's body without
 * cancelling it. A body that is a live stream (an event stream, a file being read) would then
 * hold whatever it opened for good. This cancels it, so no route has to remember that a HEAD
 * reaches it (the event stream also answers HEAD without opening anything).
 */
export function headWithoutBody(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    await next();
    if (c.req.method !== "HEAD") return;
    const body = c.res.body;
    if (!body) return;
    c.res = new Response(null, c.res);
    await body.cancel().catch(() => undefined);
  };
}
