import { Hono } from "hono";
import { ATRIUM_VERSION } from "../../version.ts";
import type { AppEnv } from "../../web/app-env.ts";

export function healthRoutes(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.get("/v1/health", (c) => c.json({ status: "ok", version: ATRIUM_VERSION }));
  return app;
}
