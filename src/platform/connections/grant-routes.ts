import { Hono } from "hono";
import type { AppEnv } from "../../web/app-env.ts";
import { readAdminBodyAs } from "../../web/json-body.ts";
import { grantBody } from "./grant-tools.ts";
import type { Grants } from "./grants.ts";

/**
 * Grants for personal connections over REST, behind the workspace gate (ADR 0042). Mounted before
 * the connection routes, so `/connections/grants` is never read as a connection's name (the name
 * is refused for connections).
 */
export function grantRoutes(grants: Grants): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get("/connections/grants", async (c) =>
    c.json({ grants: await grants.list(c.get("admission").workspace.id, c.get("principal").id) }),
  );

  app.post("/connections/grants", async (c) => {
    // An admin's to make: anyone else is refused whatever the body (the service asks again).
    const body = await readAdminBodyAs(c, grantBody);
    const { grant, created } = await grants.grant(
      c.get("admission").workspace.id,
      c.get("principal").id,
      body,
    );
    return c.json({ grant }, created ? 201 : 200);
  });

  app.delete("/connections/grants/:principal/:connection", async (c) => {
    await grants.revoke(
      c.get("admission").workspace.id,
      c.get("principal").id,
      c.req.param("principal"),
      c.req.param("connection"),
    );
    return c.body(null, 204);
  });

  return app;
}
