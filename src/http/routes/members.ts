import { Hono } from "hono";
import { InvalidInput, NotFound } from "../../errors.ts";
import { isPrincipalId, type Principal } from "../../identity/principal.ts";
import { requireAdmin } from "../../workspace/gate.ts";
import { WORKSPACE_ROLES, type Workspace, type WorkspaceRole } from "../../workspace/model.ts";
import type { AppEnv, RouteDeps } from "../context.ts";
import { readJsonObject } from "../json-body.ts";
import { workspaceGate } from "../middleware/workspace-gate.ts";

export function memberRoutes(deps: RouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.use("/v1/workspaces/:ws/members", workspaceGate(deps.workspaces));
  app.use("/v1/workspaces/:ws/members/*", workspaceGate(deps.workspaces));

  const view = async (ws: Workspace) => ({
    members: await Promise.all(
      ws.members.map(async (m) => {
        const person = await deps.users.get(m.principalId);
        return { ...m, displayName: person?.displayName ?? null, email: person?.email ?? null };
      }),
    ),
  });

  app.get("/v1/workspaces/:ws/members", async (c) => c.json(await view(c.get("admission").workspace)));

  app.post("/v1/workspaces/:ws/members", async (c) => {
    const admission = c.get("admission");
    requireAdmin(admission);
    const body = await readJsonObject(c);
    const person = await findPerson(deps, body);
    const ws = await deps.workspaces.addMember(
      admission.workspace.id,
      person.id,
      readRole(body.role ?? "member"),
    );
    return c.json(await view(ws), 201);
  });

  app.patch("/v1/workspaces/:ws/members/:principal", async (c) => {
    const admission = c.get("admission");
    requireAdmin(admission);
    const role = readRole((await readJsonObject(c)).role);
    const ws = await deps.workspaces.setRole(admission.workspace.id, c.req.param("principal"), role);
    return c.json(await view(ws));
  });

  app.delete("/v1/workspaces/:ws/members/:principal", async (c) => {
    const admission = c.get("admission");
    const target = c.req.param("principal");
    // Anyone may leave; removing someone else takes an admin.
    if (target !== c.get("principal").id) requireAdmin(admission);
    await deps.workspaces.removeMember(admission.workspace.id, target);
    return c.body(null, 204);
  });

  return app;
}

function readRole(value: unknown): WorkspaceRole {
  if (!WORKSPACE_ROLES.includes(value as WorkspaceRole)) {
    throw new InvalidInput(`Field "role" must be one of ${WORKSPACE_ROLES.join(", ")}.`);
  }
  return value as WorkspaceRole;
}

async function findPerson(deps: RouteDeps, body: Record<string, unknown>): Promise<Principal> {
  let person: Principal | undefined;
  if (typeof body.principalId === "string") {
    person = isPrincipalId(body.principalId) ? await deps.users.get(body.principalId) : undefined;
  } else if (typeof body.email === "string") {
    person = await deps.users.findByEmail(body.email);
  } else {
    throw new InvalidInput('Name the person with "principalId" or "email".');
  }
  if (!person) {
    throw new NotFound(
      "user_not_found",
      "No one with that id or email has signed in to this instance yet; ask them to sign in once.",
    );
  }
  return person;
}
