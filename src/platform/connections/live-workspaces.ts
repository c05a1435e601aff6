import type { Authorizer } from "./oauth/authorizer.ts";
import type { ConnectionStore } from "./store.ts";

/**
 * The workspaces with a connection that are live, which the health loops visit. An archived
 * workspace's connections were let go at its archive (`forgetArchivedConnections`); one still
 * indexed here — a create whose folder landed as the archive moved the workspace away, indexed
 * after the archive's forgetting — is let go now, never probed.
 */
export function liveWorkspacesWithConnections(
  store: ConnectionStore,
  authorizer: Pick<Authorizer, "forget">,
  isLive: (workspaceId: string) => boolean,
): Set<string> {
  const live = new Set<string>();
  const gone = new Set<string>();
  for (const { workspaceId } of store.all()) (isLive(workspaceId) ? live : gone).add(workspaceId);
  for (const workspaceId of gone) forgetArchivedConnections(store, authorizer, workspaceId);
  return live;
}

/**
 * An archived workspace's connections are let go, all of what is held of them in memory, as the
 * archive answers (the connections app's `archived`): the store's index and records first, so a
 * token refresh or discovery ending after keeps nothing (ConnectionTokens.remembers), then each
 * OAuth one's token sets — the set it replaced included — client secret, discovery and pending
 * flows, as a remove forgets them. Left to the health loops' next pass, they outlived the archive
 * by up to a loop's interval (live-workspaces.test.ts). Its sealed credentials go when its
 * archive is released.
 */
export function forgetArchivedConnections(
  store: ConnectionStore,
  authorizer: Pick<Authorizer, "forget">,
  workspaceId: string,
): void {
  for (const record of store.forgetWorkspace(workspaceId))
    if (record.auth.kind === "oauth") authorizer.forget(record);
}
