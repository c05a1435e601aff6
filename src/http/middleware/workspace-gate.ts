import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../../web/app-env.ts";
import { admit } from "../../workspace/gate.ts";
import type { WorkspaceStore } from "../../workspace/store.ts";

/** Admits the request to the workspace its path names, or answers the one 404. */
export function workspaceGate(workspaces: WorkspaceStore): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    c.set("admission", admit(workspaces, c.get("principal"), c.req.param("ws") ?? ""));
    await next();
  };
}
