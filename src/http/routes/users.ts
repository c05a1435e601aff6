import { Hono } from "hono";
import { Forbidden, InvalidInput, NotFound } from "../../errors.ts";
import type { Principal } from "../../identity/principal.ts";
import type { Profile } from "../../identity/users.ts";
import type { AppEnv } from "../../web/app-env.ts";
import { cancelCalls } from "../cancel-calls.ts";
import type { RouteDeps } from "../context.ts";
import { writeThenEnd } from "../write-then-end.ts";
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
    const deactivated = () => deps.users.isDeactivated(target);
    // What ends with it runs once the directory shows them deactivated, even if the write then
    // threw (its profile in place, a flush failed; ADR 0148), and again for someone already so.
    const written = await writeThenEnd(
      () => deps.users.setDeactivated(target, true),
      deactivated,
      (done) =>
        !done && !deactivated()
          ? []
          : [
              // Every grant they gave ends: reactivation restores the person, not their clients' tokens.
              () => grants.revokeWhere({ principalId: target }),
              // The invitations they sent end too: they no longer speak for any workspace (ADR 0069).
              () => deps.invitations.revokeSentBy(target),
              // Their open event streams end now, in every workspace, not at their next request.
              () => deps.eventLog.closePerson(target),
              // And their MCP calls in flight, in every workspace: no answer reaches a stolen laptop (ADR 0154).
              () => cancelCalls(deps, { principalId: target }),
            ],
    );
    const profile = written ?? (await known(deps, target));
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
    const target = c.req.param("principal");
    // A reactivation that landed is answered as one, as a deactivation is (ADR 0148).
    const written = await writeThenEnd(
      () => deps.users.setDeactivated(target, false),
      () => !deps.users.isDeactivated(target),
      () => [],
    );
    return c.json(written ?? (await known(deps, target)));
  });

  return app;
}

function requireOrgAdmin(principal: Principal): void {
  if (principal.orgRole !== "admin") throw new Forbidden("Only an org admin can manage people.");
}

/** The person as the directory holds them, after a write that threw but landed. */
async function known(deps: RouteDeps, principalId: string): Promise<Profile> {
  const profile = await deps.users.get(principalId);
  if (!profile) throw new NotFound("user_not_found", "No one with that id has signed in to this instance.");
  return profile;
}
