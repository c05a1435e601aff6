export type WorkspaceRole = "admin" | "member";

export const WORKSPACE_ROLES: readonly WorkspaceRole[] = ["admin", "member"];

export interface Member {
  principalId: string;
  role: WorkspaceRole;
  addedAt: string;
  /**
   * This membership's id, drawn at random at the join (`mbs_` + 32 hex); what a consent or a
   * connection grant records, to tell this membership from one the person left (membership-id.ts,
   * ADR 0169 amended). Absent in members added before it was kept.
   */
  membershipId?: string;
}

/** The content of `<root>/<ws>/workspace.json`. */
export interface Workspace {
  id: string;
  name: string;
  createdAt: string;
  updatedAt: string;
  members: Member[];
}

/**
 * The one membership decision: the role `principalId` holds in `workspace`, or undefined when they
 * hold none or there is no such workspace. The gate, the authorization endpoint, skill writes and
 * the workspace listings all ask it, so "member" means the same thing everywhere.
 */
export function roleIn(workspace: Workspace | undefined, principalId: string): WorkspaceRole | undefined {
  return workspace?.members.find((member) => member.principalId === principalId)?.role;
}

export const MAX_WORKSPACE_NAME_CHARS = 200;
