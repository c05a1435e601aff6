import type { MiddlewareHandler } from "hono";
import { refuseDeactivated, type UserDirectory } from "../../identity/users.ts";
import type { AppEnv } from "../../web/app-env.ts";
import { admit } from "../../workspace/gate.ts";
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
    c.set("admitAgain", () => {
      refuseDeactivated(users, principal.id);
      c.set("admission", admit(workspaces, principal, workspaceId));
    });
    await next();
  };
}
