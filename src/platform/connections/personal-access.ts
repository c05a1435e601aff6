import { WorkspaceNotFound } from "../../errors.ts";
import { refuseDeactivated, type UserDirectory } from "../../identity/users.ts";
import type { Caller } from "../../sources/caller-meta.ts";
import { joinToolName } from "../../sources/tool-names.ts";
import type { WorkspaceStore } from "../../workspace/store.ts";
import { type Denial, deny } from "./call-audit.ts";
import type { GrantStore } from "./grants.ts";
import type { ConnectionRecord } from "./model.ts";

/** Whether a personal connection may act in the workspace a view was asked from. */
export type GrantState = "not_needed" | "granted" | "needed";

/** What is asked, live, before a personal connection acts in a workspace. */
export interface AccessDeps {
  users: Pick<UserDirectory, "isDeactivated">;
  workspaces: Pick<WorkspaceStore, "get" | "roleOf">;
  grants: Pick<GrantStore, "has">;
}

/** `not_needed` when the owner is the workspace's only member; else whether an admin granted it. */
export async function grantState(
  deps: AccessDeps,
  workspaceId: string,
  ownerId: string,
  name: string,
): Promise<GrantState> {
  const members = deps.workspaces.get(workspaceId)?.members ?? [];
  const owner = members.find((m) => m.principalId === ownerId);
  if (!owner) return "needed";
  if (!members.some((m) => m.principalId !== ownerId)) return "not_needed";
  return (await deps.grants.has(workspaceId, owner, name)) ? "granted" : "needed";
}

/**
 * Why `caller` may not use `owner`'s personal connection now, if they may not: the gate's first
 * check on every call (gate.ts `mayUse`), live, failing closed.
 */
export async function personalDenial(
  deps: AccessDeps,
  record: ConnectionRecord,
  owner: string,
  caller: Caller,
): Promise<Denial | undefined> {
  // The registry serves the source to its owner only; a caller who is not the owner is refused
  // all the same, in case a source ever reached someone else's registry slot.
  if (caller.principalId !== owner) {
    return deny(
      "membership",
      `Unknown tool of "${record.name}": list the tools of this workspace and use a name from that list.`,
    );
  }
  if (deps.users.isDeactivated(owner)) {
    return deny("membership", `${record.name} is not used: its owner has been deactivated by an org admin.`);
  }
  if (deps.workspaces.roleOf(caller.workspaceId, owner) === undefined) {
    return deny(
      "membership",
      `${record.name} is not used here: its owner is no longer a member of this workspace.`,
    );
  }
  if ((await grantState(deps, caller.workspaceId, owner, record.name)) === "needed") {
    // A long name takes this past the ledger's 200 characters: the owner is told it whole, the
    // ledger keeps its start (audit-entry.ts ledgerReason).
    return deny(
      "grant",
      `This workspace has other members, so your personal connection ${record.name} acts here only with an admin's grant (${joinToolName("connections", "grant")}); ask a workspace admin.`,
    );
  }
  return undefined;
}

/**
 * That the person adding or refreshing their connection from `workspaceId` is still a member of it
 * and not deactivated. Asked live, also after a remote server kept the caller waiting (adr/0129):
 * someone no longer a member gets the wall's 404, as for a workspace they never belonged to; a
 * deactivated person 403.
 */
export function requireMember(deps: AccessDeps, workspaceId: string, principalId: string): void {
  if (deps.workspaces.roleOf(workspaceId, principalId) === undefined)
    throw new WorkspaceNotFound(workspaceId);
  refuseDeactivated(deps.users, principalId);
}

/**
 * Whether `ownerId` may use a personal connection without a request (the health loops): not
 * deactivated and a member somewhere. Checked live before each look with the credential.
 */
export function mayActForOwner(
  deps: { users: AccessDeps["users"]; workspaces: Pick<WorkspaceStore, "listFor"> },
  ownerId: string,
): boolean {
  return !deps.users.isDeactivated(ownerId) && deps.workspaces.listFor(ownerId).length > 0;
}
