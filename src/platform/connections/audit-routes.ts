import { Hono } from "hono";
import { createMiddleware } from "hono/factory";
import { Forbidden, InvalidInput } from "../../errors.ts";
import type { AppEnv } from "../../web/app-env.ts";
import { takesQuery } from "../../web/query.ts";
import { type AuditLedger, MAX_AUDIT_PAGE } from "./audit.ts";

/**
 * The audit ledger over REST, behind the workspace gate: `GET /audit` (relative to
 * `/v1/workspaces/:ws`), newest first, `?limit=` (1–500, default 100) and `?cursor=`. Workspace
 * admins only: the ledger says who called what, which a member has no need to see of others.
 */
export function auditRoutes(ledger: Pick<AuditLedger, "page">): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  // The role is checked before the query is read, so a member learns nothing from a 400.
  const adminsOnly = createMiddleware<AppEnv>(async (c, next) => {
    if (c.get("admission").role !== "admin") {
      throw new Forbidden(
        "Only a workspace admin can read the connections audit ledger; ask an admin of this workspace.",
      );
    }
    await next();
  });

  app.get("/audit", adminsOnly, takesQuery("limit", "cursor"), async (c) => {
    const { limit, cursor } = c.req.valid("query");
    if (limit !== undefined && !/^[0-9]{1,3}$/.test(limit)) {
      throw new InvalidInput(`limit is a whole number from 1 to ${MAX_AUDIT_PAGE}.`);
    }
    const page = await ledger.page(c.get("admission").workspace.id, {
      cursor,
      limit: limit === undefined ? undefined : Number(limit),
    });
    return c.json(page);
  });

  return app;
}
