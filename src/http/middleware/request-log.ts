import { randomUUID } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import type { Logger } from "../../log.ts";
import type { AppEnv } from "../../web/app-env.ts";

/**
 * Gives each request an id and a child logger, and logs one line when it ends with the
 * principal and workspace it was admitted as. The query string is never logged: OAuth
 * codes and state travel there.
 */
export function requestLog(log: Logger): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const requestId = randomUUID();
    const started = performance.now();
    c.set("requestId", requestId);
    c.header("x-request-id", requestId);
    await next();
    if (!log.isLevelEnabled("info")) return;
    log.info(
      {
        requestId,
        method: c.req.method,
        path: c.req.path,
        status: c.res.status,
        ms: Math.round((performance.now() - started) * 10) / 10,
        principal: c.get("principal")?.id,
        workspace: c.get("admission")?.workspace.id,
      },
      "request",
    );
  };
}
