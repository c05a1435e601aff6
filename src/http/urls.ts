// The one function that builds a workspace's MCP URL. The bootstrap listing, and later the
// OAuth resource metadata and the token audience check, all use it, so they cannot drift.
export function workspaceMcpUrl(publicUrl: string, workspaceId: string): string {
  return `${publicUrl}/mcp/${workspaceId}`;
}
