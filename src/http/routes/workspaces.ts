import { Hono } from "hono";
import * as z from "zod";
import { platformInput } from "../../platform/platform-tool.ts";
import type { AppEnv } from "../../web/app-env.ts";
import { readAdminBodyAs, readJsonBodyAs } from "../../web/json-body.ts";
import { requireAdmin } from "../../workspace/gate.ts";
import { checkName } from "../../workspace/workspace-record.ts";
import { cancelCalls } from "../cancel-calls.ts";
import type { RouteDeps } from "../context.ts";
import { viewsFor, workspaceView } from "../views.ts";
import { writeThenEnd } from "../write-then-end.ts";
import { type GrantRevoker, indexed } from "./members.ts";

// A create's and a rename's body. Strict, as every REST body is: a field no route reads is refused
// by name, never dropped (ADR 0095).
const nameBody = platformInput({ name: z.string() });

/** Listing and creating workspaces: the caller's own, no gate to pass. */
export function workspaceRoutes(deps: RouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get("/v1/workspaces", (c) => {
    const principal = c.get("principal");
    return c.json({
      workspaces: viewsFor(deps.workspaces.listFor(principal.id), principal.id, deps.publicUrl()),
    });
  });

  app.post("/v1/workspaces", async (c) => {
    const { name } = await readJsonBodyAs(c, nameBody);
    const ws = await deps.workspaces.create(name, c.get("principal").id);
    return c.json(workspaceView(ws, "admin", deps.publicUrl()), 201);
  });

  return app;
}

/** One workspace, mounted behind the gate at /v1/workspaces/:ws. */
export function workspaceItemRoutes(deps: RouteDeps, grants: GrantRevoker): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get("/", (c) => {
    const { workspace, role } = c.get("admission");
    return c.json(workspaceView(workspace, role, deps.publicUrl()));
  });

  app.patch("/", async (c) => {
    const { name } = await readAdminBodyAs(c, nameBody);
    // Read after the body: reading it admitted the request again (workspace-gate.ts).
    const admission = c.get("admission");
    const checked = checkName(name);
    const id = admission.workspace.id;
    // A rename whose workspace.json landed and whose folder's flush then failed is the rename:
    // the index holds the name as the disk does, and every reader sees it (ADR 0148). Before, it
    // answered 500 (test/integration/workspace-rename-unflushed-write.test.ts).
    const ws = await writeThenEnd(
      () => deps.workspaces.rename(id, checked, c.get("principal").id),
      () => deps.workspaces.get(id)?.name === checked,
      () => [],
    );
    return c.json(workspaceView(ws ?? indexed(deps, id), admission.role, deps.publicUrl()));
  });

  app.delete("/", async (c) => {
    const admission = c.get("admission");
    requireAdmin(admission);
    const id = admission.workspace.id;
    const gone = () => deps.workspaces.get(id) === undefined;
    // What ends with it runs once it is out of the index, even if the archive then threw (its
    // folder moved, a flush failed; ADR 0148), and again when an archive admitted at the same
    // time took it out first.
    await writeThenEnd(
      () => deps.workspaces.archive(id, c.get("principal").id),
      gone,
      (done) =>
        !done && !gone()
          ? []
          : [
              () => deps.eventLog.closeWorkspace(id),
              // Its calls in flight end with it: none answers a workspace nobody may reach (ADR 0154).
              () => cancelCalls(deps, { workspaceId: id }),
              () => deps.registries.evict(id),
              // What the apps hold in memory for it goes now, not at a later loop's pass (ADR 0155).
              ...deps.apps.map((app) => () => app.archived?.(id)),
              // Nobody can join or use it any more: its invitations and everyone's grants for it end.
              () => deps.invitations.revokeAll(id),
              () => grants.revokeWhere({ workspaceId: id }),
            ],
    );
    return c.body(null, 204);
  });

  return app;
}
