import { randomUUID } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import type { Logger } from "../../log.ts";
import type { AppEnv } from "../../web/app-env.ts";

/** What the one line logged per request says. */
export interface RequestLine {
  requestId: string;
  method: string;
  path: string;
  status: number;
  /** `performance.now()` when the request arrived. */
  started: number;
  principal: string | undefined;
  workspace: string | undefined;
}

/** A fresh request id: answered as `x-request-id` and logged with every line about the request. */
export function newRequestId(): string {
  return randomUUID();
}

/**
 * The line every request ends with, whichever path served it (this middleware, or the MCP front
 * door in http/mcp-front-door.ts). The query string is never logged: OAuth codes and state travel
 * there.
 */
export function logRequest(log: Logger, line: RequestLine): void {
  if (!log.isLevelEnabled("info")) return;
  log.info(
    {
      requestId: line.requestId,
      method: line.method,
      path: line.path,
      status: line.status,
      ms: Math.round((performance.now() - line.started) * 10) / 10,
      principal: line.principal,
      workspace: line.workspace,
    },
    "request",
  );
}

/**
 * Gives each request an id and a child logger, and logs one line when it ends with the
 * principal and workspace it was admitted as.
 */
export function requestLog(log: Logger): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const requestId = newRequestId();
    const started = performance.now();
    c.set("requestId", requestId);
    c.header("x-request-id", requestId);
    await next();
    logRequest(log, {
      requestId,
      method: c.req.method,
      path: c.req.path,
      status: c.res.status,
      started,
      principal: c.get("principal")?.id,
      workspace: c.get("admission")?.workspace.id,
    });
  };
}
