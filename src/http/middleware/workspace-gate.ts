import type { MiddlewareHandler } from "hono";
import type { Principal } from "../../identity/principal.ts";
import { refuseDeactivated, type UserDirectory } from "../../identity/users.ts";
import type { AppEnv } from "../../web/app-env.ts";
import { accessCheckOf } from "../../workspace/access-check.ts";
import { type Admission, admit } from "../../workspace/gate.ts";
import type { WorkspaceStore } from "../../workspace/store.ts";

/**
 * Admits the request to the workspace its path names, or answers the one 404; and again, with
 * what holds then, once a body has been read (`admitAgain`): a request admitted when its headers
 * came could send its body minutes later, and a member removed or an admin demoted meanwhile
 * wrote with the standing they had lost (test/integration/admitted-again.test.ts).
 */
export function workspaceGate(
  workspaces: WorkspaceStore,
  users: Pick<UserDirectory, "isDeactivated">,
): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const principal = c.get("principal");
    const workspaceId = c.req.param("ws") ?? "";
    c.set("admission", admit(workspaces, principal, workspaceId));
    c.set("admitAgain", () => c.set("admission", admitAgain(workspaces, users, principal, workspaceId)));
    // The caller of every REST twin of a tool: the store asks it just before its write is seen.
    c.set("access", accessCheckOf(workspaces, users, principal.id, workspaceId));
    await next();
  };
}

/**
 * The gate again, once a body has come (adr/0129): the person still active, and still a member of
 * the workspace, with the role they hold now. Both MCP routes and every body behind the gate ask it.
 */
export function admitAgain(
  workspaces: WorkspaceStore,
  users: Pick<UserDirectory, "isDeactivated">,
  principal: Principal,
  workspaceId: string,
): Admission {
  refuseDeactivated(users, principal.id);
  return admit(workspaces, principal, workspaceId);
}

/**
 * What `admitAgain` decides, as a yes or no, where a refusal ends a stream instead of answering
 * (adr/0154): the person still active and still a member of the workspace. In memory.
 */
export function stillAdmitted(
  workspaces: Pick<WorkspaceStore, "roleOf">,
  users: Pick<UserDirectory, "isDeactivated">,
  principalId: string,
  workspaceId: string,
): boolean {
  return !users.isDeactivated(principalId) && workspaces.roleOf(workspaceId, principalId) !== undefined;
}
