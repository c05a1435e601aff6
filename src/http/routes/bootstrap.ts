import { Hono } from "hono";
import type { AppEnv } from "../../web/app-env.ts";
import type { RouteDeps } from "../context.ts";
import { viewsFor } from "../views.ts";

/** The caller and their workspaces. No workspace is "current": the URL is what names one. */
export function bootstrapRoutes(deps: RouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.get("/v1/bootstrap", async (c) => {
    const principal = c.get("principal");
    const mine = await deps.firstWorkspace.ensure(principal);
    return c.json({ principal, workspaces: viewsFor(mine, principal.id, deps.publicUrl()) });
  });
  return app;
}
