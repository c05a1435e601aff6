import { Hono } from "hono";
import { Forbidden, InvalidInput } from "../../errors.ts";
import type { AppEnv } from "../../web/app-env.ts";
import { type AuditLedger, MAX_AUDIT_PAGE } from "./audit.ts";

/**
 * The audit ledger over REST, behind the workspace gate: `GET /audit` (relative to
 * `/v1/workspaces/:ws`), newest first, `?limit=` (1–500, default 100) and `?cursor=`. Workspace
 * admins only: the ledger says who called what, which a member has no need to see of others.
 */
export function auditRoutes(ledger: Pick<AuditLedger, "page">): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get("/audit", async (c) => {
    const admission = c.get("admission");
    // The role is checked before the query, so a member learns nothing from a 400.
    if (admission.role !== "admin") {
      throw new Forbidden(
        "Only a workspace admin can read the connections audit ledger; ask an admin of this workspace.",
      );
    }
    const limit = c.req.query("limit");
    if (limit !== undefined && !/^[0-9]{1,3}$/.test(limit)) {
      throw new InvalidInput(`limit is a whole number from 1 to ${MAX_AUDIT_PAGE}.`);
    }
    const page = await ledger.page(admission.workspace.id, {
      cursor: c.req.query("cursor"),
      limit: limit === undefined ? undefined : Number(limit),
    });
    return c.json(page);
  });

  return app;
}
