import { workspaceMcpUrl } from "../web/urls.ts";
import { roleIn, type Workspace, type WorkspaceRole } from "../workspace/model.ts";

export interface WorkspaceView {
  id: string;
  name: string;
  role: WorkspaceRole;
  createdAt: string;
  mcpUrl: string;
}

export function workspaceView(ws: Workspace, role: WorkspaceRole, publicUrl: string): WorkspaceView {
  return {
    id: ws.id,
    name: ws.name,
    role,
    createdAt: ws.createdAt,
    mcpUrl: workspaceMcpUrl(publicUrl, ws.id),
  };
}

export function viewsFor(workspaces: Workspace[], principalId: string, publicUrl: string): WorkspaceView[] {
  return workspaces.map((ws) => {
    const role = roleIn(ws, principalId) ?? "member";
    return workspaceView(ws, role, publicUrl);
  });
}
