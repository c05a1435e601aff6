import { Forbidden, WorkspaceNotFound } from "../errors.ts";
import type { Principal } from "../identity/principal.ts";
import { roleIn, type Workspace, type WorkspaceRole } from "./model.ts";
import type { WorkspaceStore } from "./store.ts";

export interface Admission {
  workspace: Workspace;
  role: WorkspaceRole;
}

/**
 * The wall. Membership is checked on every request, not cached per token: removing a
 * member must cut their next call (test/integration/wall-suite.ts "a removed member's next
 * call is refused"). Malformed, unknown, archived and not-a-member are one answer.
 */
export function admit(store: WorkspaceStore, principal: Principal, workspaceId: string): Admission {
  const workspace = store.get(workspaceId);
  const role = roleIn(workspace, principal.id);
  if (!workspace || !role) throw new WorkspaceNotFound(workspaceId);
  return { workspace, role };
}

export function requireAdmin(admission: Admission): void {
  if (admission.role !== "admin") {
    throw new Forbidden("Only a workspace admin can do this; ask an admin of this workspace.");
  }
}
