import { Forbidden, WorkspaceNotFound } from "../errors.ts";
import type { Principal } from "../identity/principal.ts";
import { roleIn, type Workspace, type WorkspaceRole } from "./model.ts";

export interface Admission {
  workspace: Workspace;
  role: WorkspaceRole;
}

/** Where the gate reads workspaces from: the store's in-memory index. */
interface Workspaces {
  get(workspaceId: string): Workspace | undefined;
}

/**
 * The wall. Membership is checked on every request, not cached per token: removing a
 * member must cut their next call (test/integration/wall-suite.ts "a removed member's next
 * call is refused"). Malformed, unknown, archived and not-a-member are one answer.
 */
export function admit(store: Workspaces, principal: Principal, workspaceId: string): Admission {
  return admissionTo(store.get(workspaceId), workspaceId, principal.id);
}

/**
 * The gate's decision over a workspace as given: the store asks it again under its lock, of the
 * workspace its write is about to change, so a write sent before its actor lost their standing
 * gets the answer it would have got after (adr/0129, amended).
 */
export function admissionTo(
  workspace: Workspace | undefined,
  workspaceId: string,
  principalId: string,
): Admission {
  const role = roleIn(workspace, principalId);
  if (!workspace || !role) throw new WorkspaceNotFound(workspaceId);
  return { workspace, role };
}

export function requireAdmin(admission: Admission): void {
  if (admission.role !== "admin") throw notAdmin();
}

/** What `requireAdmin` throws, for a check that asks the role again later (access-check.ts). */
export function notAdmin(): Forbidden {
  return new Forbidden("Only a workspace admin can do this; ask an admin of this workspace.");
}
