export type WorkspaceRole = "admin" | "member";

export const WORKSPACE_ROLES: readonly WorkspaceRole[] = ["admin", "member"];

export interface Member {
  principalId: string;
  role: WorkspaceRole;
  addedAt: string;
}

/** The content of `<root>/<ws>/workspace.json`. */
export interface Workspace {
  id: string;
  name: string;
  createdAt: string;
  updatedAt: string;
  members: Member[];
}

export const MAX_WORKSPACE_NAME_CHARS = 200;
