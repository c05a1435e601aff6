import { type Context, Hono } from "hono";
import * as z from "zod";
import { platformInput } from "../../platform/platform-tool.ts";
import type { AppEnv } from "../../web/app-env.ts";
import { readAdminBodyAs } from "../../web/json-body.ts";
import { requireAdmin } from "../../workspace/gate.ts";
import { type Invitation, readInvitee } from "../../workspace/invitation.ts";
import { roleIn, WORKSPACE_ROLES, type Workspace, type WorkspaceRole } from "../../workspace/model.ts";
import type { RouteDeps } from "../context.ts";
import { type WorkspaceView, workspaceView } from "../views.ts";

/** A role as a body names it: `admin` or `member`. */
export const roleInput = z.enum(WORKSPACE_ROLES as [WorkspaceRole, ...WorkspaceRole[]]);

// Strict, as every REST body is: a field no route reads is refused by name, never dropped (ADR 0095).
const inviteBody = platformInput({
  principalId: z.string().optional(),
  email: z.string().optional(),
  role: roleInput.optional(),
});

/**
 * Joining a workspace takes the joiner's acceptance (ADR 0027). Admins invite and see their
 * workspace's pending invitations behind the gate; the invitee lists theirs and answers at
 * /v1/invitations, which names nothing of the workspace but its name.
 */
/** A workspace's invitations, mounted behind the gate at /v1/workspaces/:ws. */
export function workspaceInvitationRoutes(deps: RouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get("/invitations", async (c) => {
    const admission = c.get("admission");
    requireAdmin(admission);
    return c.json({ invitations: await deps.invitations.forWorkspace(admission.workspace.id) });
  });

  app.post("/invitations", async (c) => c.json({ invitation: await invite(deps, c) }, 201));

  app.delete("/invitations/:id", async (c) => {
    const admission = c.get("admission");
    requireAdmin(admission);
    await deps.invitations.revoke(admission.workspace.id, c.req.param("id"));
    return c.body(null, 204);
  });

  return app;
}

/** The invitee's side: their invitations and their answers. */
export function invitationRoutes(deps: RouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get("/v1/invitations", async (c) => {
    return c.json({ invitations: await invitationsFor(deps, c.get("principal").id) });
  });

  app.post("/v1/invitations/:id/accept", async (c) => {
    return c.json({ workspace: await accept(deps, c.get("principal").id, c.req.param("id")) });
  });

  app.post("/v1/invitations/:id/decline", async (c) => {
    await decline(deps, c.get("principal").id, c.req.param("id"));
    return c.body(null, 204);
  });

  return app;
}

/**
 * `POST …/invitations`, and `POST …/members`, which invites the same way: an invitation from
 * `{"principalId"}` or `{"email"}` and `"role"`, by an admin (asked before the body is read and
 * after: readAdminBodyAs). Nothing is looked up, so the answer (status, shape, time) is the same
 * whether or not anyone here has that address or id, and it repeats only what the admin sent.
 */
export async function invite(deps: RouteDeps, c: Context<AppEnv>): Promise<Invitation> {
  const body = await readAdminBodyAs(c, inviteBody);
  // Read after the body: reading it admitted the request again (workspace-gate.ts).
  const workspaceId = c.get("admission").workspace.id;
  const invitee = readInvitee(body);
  return deps.invitations.create(workspaceId, invitee, body.role ?? "member", c.get("principal").id);
}

/** An invitation as its invitee sees it: the workspace's name, never its id, members or content. */
export interface InvitationForInvitee {
  id: string;
  workspaceName: string;
  role: WorkspaceRole;
  invitedBy: string;
  createdAt: string;
  expiresAt: string;
}

export async function invitationsFor(deps: RouteDeps, principalId: string): Promise<InvitationForInvitee[]> {
  const views: InvitationForInvitee[] = [];
  for (const invitation of await deps.invitations.forPerson(principalId)) {
    const workspace = deps.workspaces.get(invitation.workspaceId);
    // A workspace archived since the invitation was sent has nothing left to join.
    if (!workspace) continue;
    const inviter = await deps.users.get(invitation.invitedBy);
    views.push({
      id: invitation.id,
      workspaceName: workspace.name,
      role: invitation.role,
      invitedBy: inviter?.displayName ?? "a workspace admin",
      createdAt: invitation.createdAt,
      expiresAt: invitation.expiresAt,
    });
  }
  return views;
}

/**
 * The person's acceptance: only now are they a member, and their other invitations to the
 * workspace are gone (ADR 0131). Answers the workspace they joined.
 */
export async function accept(deps: RouteDeps, principalId: string, id: string): Promise<WorkspaceView> {
  return deps.invitations.accept(id, principalId, async (invitation, senderStands) => {
    const ws = await addInvitee(deps.workspaces, invitation, principalId, senderStands);
    return workspaceView(ws, invitation.role, deps.publicUrl());
  });
}

/**
 * Adds the invitee. The member's write can land and still throw: the new workspace.json renamed
 * into place, then the folder's flush failed, and the store indexes what the disk holds. Refused
 * for anything but their being a member already, yet listed now, they joined: the acceptance is
 * answered by that join and its clean-up runs (ADR 0138), where it was a 500 whose retry was
 * 409 member_exists (test/integration/invitations-one-person.test.ts "flush").
 */
async function addInvitee(
  workspaces: RouteDeps["workspaces"],
  invitation: Invitation,
  principalId: string,
  senderStands: (workspace: Workspace) => void,
): Promise<Workspace> {
  // Asked before the add: a failure earlier than its member_exists check (workspace.json not
  // read, the sender gone) would otherwise find a member of before listed and call it this join
  // (invitations-one-person.test.ts "does not read"). The acceptance holds the workspace's
  // invitation key, so no other acceptance of theirs lands in between.
  const before = workspaces.get(invitation.workspaceId);
  const memberBefore = before !== undefined && roleIn(before, principalId) !== undefined;
  try {
    return await workspaces.addMember(invitation.workspaceId, principalId, invitation.role, senderStands);
  } catch (error) {
    const now = workspaces.get(invitation.workspaceId);
    if (memberBefore || !now || roleIn(now, principalId) === undefined) throw error;
    return now;
  }
}

export async function decline(deps: RouteDeps, principalId: string, id: string): Promise<void> {
  await deps.invitations.decline(id, principalId);
}
