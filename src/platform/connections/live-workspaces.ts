import type { Authorizer } from "./oauth/authorizer.ts";
import type { ConnectionStore } from "./store.ts";

/**
 * The workspaces with a connection that are live, which the health loops visit. An archived
 * workspace's connections are let go here, all of what is held of them in memory: the store's
 * index and records first, so a token refresh or discovery ending after keeps nothing
 * (ConnectionTokens.remembers), then each OAuth one's token sets — the set it replaced included —
 * client secret and discovery, as a remove forgets them. Kept, they outlived the workspace for the
 * process's life (live-workspaces.test.ts). Its sealed credentials go when its archive is released.
 */
export function liveWorkspacesWithConnections(
  store: ConnectionStore,
  isLive: (workspaceId: string) => boolean,
  authorizer: Pick<Authorizer, "forget">,
): Set<string> {
  const live = new Set<string>();
  for (const { workspaceId } of store.all()) {
    if (isLive(workspaceId)) live.add(workspaceId);
    else
      for (const record of store.forgetWorkspace(workspaceId))
        if (record.auth.kind === "oauth") authorizer.forget(record);
  }
  return live;
}
