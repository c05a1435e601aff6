import { Hono } from "hono";
import { WorkspaceNotFound } from "../../errors.ts";
import type { Grants } from "../../oauth/grants.ts";
import { platformInput } from "../../platform/platform-tool.ts";
import type { AppEnv } from "../../web/app-env.ts";
import { readAdminBodyAs } from "../../web/json-body.ts";
import { requireAdmin } from "../../workspace/gate.ts";
import type { Workspace } from "../../workspace/model.ts";
import { cancelCalls } from "../cancel-calls.ts";
import type { RouteDeps } from "../context.ts";
import { writeThenEnd } from "../write-then-end.ts";
import { invite, roleInput } from "./invitations.ts";

/** What ends a person's access besides membership: the grants their MCP clients hold. */
export type GrantRevoker = Pick<Grants, "revokeWhere">;

// Strict, as every REST body is: a field no route reads is refused by name, never dropped (ADR 0095).
const roleBody = platformInput({ role: roleInput });

export function memberRoutes(deps: RouteDeps, grants: GrantRevoker): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  const view = async (ws: Workspace) => ({
    members: await Promise.all(
      ws.members.map(async (m) => {
        const person = await deps.users.get(m.principalId);
        return { ...m, displayName: person?.displayName ?? null, email: person?.email ?? null };
      }),
    ),
  });

  app.get("/members", async (c) => c.json(await view(c.get("admission").workspace)));

  // Adding someone without their word let anyone pull anyone into a workspace and told the
  // caller who was known here (issue 10, Security 2). Kept for existing clients: it now
  // invites, and answers exactly as POST …/invitations does (ADR 0027).
  app.post("/members", async (c) => c.json({ invitation: await invite(deps, c) }, 201));

  app.patch("/members/:principal", async (c) => {
    const { role } = await readAdminBodyAs(c, roleBody);
    // Read after the body: reading it admitted the request again (workspace-gate.ts).
    const admission = c.get("admission");
    const target = c.req.param("principal");
    const id = admission.workspace.id;
    const roleNow = () => deps.workspaces.roleOf(id, target);
    const ws = await writeThenEnd(
      () => deps.workspaces.setRole(id, target, role, c.get("principal").id),
      () => roleNow() === role,
      // A demoted admin's pending invitations go with the role (ADR 0069); whoever the index says
      // is no admin after a write that failed sends none either.
      (done) =>
        (done ? role !== "admin" : roleNow() !== "admin")
          ? [() => deps.invitations.revokeSentBy(target, id)]
          : [],
    );
    return c.json(await view(ws ?? indexed(deps, id)));
  });

  app.delete("/members/:principal", async (c) => {
    const admission = c.get("admission");
    const target = c.req.param("principal");
    const by = c.get("principal").id;
    // Anyone may leave; removing someone else takes an admin (asked again under the store's lock).
    if (target !== by) requireAdmin(admission);
    await removeMember(deps, grants, admission.workspace.id, target, by);
    return c.body(null, 204);
  });

  return app;
}

/**
 * Removal and leaving, by `by` (the person themselves, or an admin): the membership goes, and the
 * store ends with it every pending invitation to the workspace naming the person, so they cannot
 * come back by accepting one (ADR 0131); then every grant the person gave an MCP client for this
 * workspace (under any public URL it had), so a refresh token cannot outlive the membership and
 * re-adding them asks for consent again (test/integration/leaving.test.ts), and every invitation
 * they sent to it as its admin (ADR 0069), and their MCP calls in flight there (ADR 0154). Those
 * run once the removal is done, or, when it failed, if the index no longer lists the person:
 * removing someone already gone ends what a removal before it left (ADR 0148).
 */
export async function removeMember(
  deps: RouteDeps,
  grants: GrantRevoker,
  workspaceId: string,
  principalId: string,
  by: string,
): Promise<void> {
  const gone = () => deps.workspaces.roleOf(workspaceId, principalId) === undefined;
  await writeThenEnd(
    () => deps.workspaces.removeMember(workspaceId, principalId, by),
    gone,
    (done) =>
      !done && !gone()
        ? []
        : [
            () => cancelCalls(deps, { principalId, workspaceId }),
            () => grants.revokeWhere({ principalId, workspaceId }),
            () => deps.invitations.revokeSentBy(principalId, workspaceId),
          ],
  );
}

/** The workspace as the index holds it, for a write answered as done though it threw (ADR 0148). */
export function indexed(deps: RouteDeps, workspaceId: string): Workspace {
  const ws = deps.workspaces.get(workspaceId);
  if (!ws) throw new WorkspaceNotFound(workspaceId);
  return ws;
}
