import type { ConnectionStore } from "../store.ts";

/** The two stores an OAuth connection's record can live in: the workspace's, or its owner's (ADR 0042). */
export interface ConnectionStores {
  shared: ConnectionStore;
  personal: ConnectionStore;
}

/**
 * Where a connection's record is read and written: a personal one under its owner, a workspace's
 * under the workspace. Every lookup of a flow or a token set goes through here, so two members'
 * personal connections of one name — or a personal and a shared one — never meet.
 */
export function recordHome(
  stores: ConnectionStores,
  at: { workspaceId: string; owner?: string | undefined },
): { store: ConnectionStore; key: string } {
  return at.owner === undefined
    ? { store: stores.shared, key: at.workspaceId }
    : { store: stores.personal, key: at.owner };
}

/** Who must re-authorize a connection, for the errors that say so. */
export function reauthorizer(at: { owner?: string | undefined }): string {
  return at.owner === undefined ? "a workspace admin" : "its owner";
}
