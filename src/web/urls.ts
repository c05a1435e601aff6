import { isWorkspaceId } from "../ids.ts";

// The one function that builds a workspace's MCP URL. The bootstrap listing, the OAuth
// resource metadata, the `resource` check at /oauth/authorize and the token audience check
// all use it, so they cannot drift.
export function workspaceMcpUrl(publicUrl: string, workspaceId: string): string {
  return `${publicUrl}/mcp/${workspaceId}`;
}

/** The workspace whose MCP URL `resource` is exactly, or `undefined` for any other string. */
export function workspaceOfResource(publicUrl: string, resource: string): string | undefined {
  const workspaceId = resource.slice(resource.lastIndexOf("/") + 1);
  if (!isWorkspaceId(workspaceId)) return undefined;
  return workspaceMcpUrl(publicUrl, workspaceId) === resource ? workspaceId : undefined;
}
