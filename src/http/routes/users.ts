import { Hono } from "hono";
import { Forbidden, InvalidInput } from "../../errors.ts";
import type { Principal } from "../../identity/principal.ts";
import type { AppEnv } from "../../web/app-env.ts";
import type { RouteDeps } from "../context.ts";
import type { GrantRevoker } from "./members.ts";

/** The org's people, for org admins: who has signed in, and offboarding. */
export function userRoutes(deps: RouteDeps, grants: GrantRevoker): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get("/v1/users", (c) => {
    requireOrgAdmin(c.get("principal"));
    return c.json({ users: deps.users.list() });
  });

  app.post("/v1/users/:principal/deactivate", async (c) => {
    const admin = c.get("principal");
    requireOrgAdmin(admin);
    const target = c.req.param("principal");
    if (target === admin.id) throw new InvalidInput("You cannot deactivate yourself; ask another org admin.");
    const profile = await deps.users.setDeactivated(target, true);
    // Every grant they gave ends: reactivation restores the person, not their clients' tokens.
    await grants.revokeWhere({ principalId: target });
    // The invitations they sent end too: they no longer speak for any workspace (ADR 0069).
    await deps.invitations.revokeSentBy(target);
    // Their open event streams end now, in every workspace, not at their next request.
    deps.eventLog.closePerson(target);
    // Each workspace they belong to hears it (its inbox records it: platform/notifications/app.ts).
    for (const workspace of deps.workspaces.listFor(target)) {
      deps.events.publish({
        type: "member.deactivated",
        workspaceId: workspace.id,
        principalId: target,
        name: profile.displayName,
      });
    }
    return c.json(profile);
  });

  app.post("/v1/users/:principal/reactivate", async (c) => {
    requireOrgAdmin(c.get("principal"));
    return c.json(await deps.users.setDeactivated(c.req.param("principal"), false));
  });

  return app;
}

function requireOrgAdmin(principal: Principal): void {
  if (principal.orgRole !== "admin") throw new Forbidden("Only an org admin can manage people.");
}
