import { WorkspaceNotFound } from "../errors.ts";
import { refuseDeactivated, type UserDirectory } from "../identity/users.ts";
import type { WorkspaceRole } from "./model.ts";
import type { WorkspaceStore } from "./store.ts";

/**
 * Whether the person a write is made for still has access to the workspace it is made in: asked by
 * each store at its commit point, under the lock it holds, just before the one rename, append or
 * exclusive create that makes the change seen. It throws the refusal that person's next request
 * gets (`WorkspaceNotFound`, `AccountDeactivated`), and the store then leaves nothing behind: a
 * write whose caller was removed, deactivated or archived out while it ran does not land
 * (adr/0154, amended). Distinct from the call's signal, which a 2025-era client's closed
 * connection also aborts (adr/0065): a disconnection is not a cancellation, and its write lands.
 */
export type AccessCheck = () => void;

/**
 * The check of a write no person's call makes (an operator's command, a store used directly by a
 * test): nothing to ask. Named, so that a write with no caller says so where it is made; a caller's
 * write never reaches a store without its own check (the type has no default).
 */
export const NO_CALLER: AccessCheck = () => undefined;

/**
 * The gate's decision, asked again at a write's commit: `principalId` still active, and still a
 * member of `workspaceId`, which is not archived. In memory, as `stillAdmitted` is: a map lookup
 * and a scan of the workspace's members, no disk read.
 */
export function accessCheckOf(
  workspaces: Pick<WorkspaceStore, "roleOf">,
  users: Pick<UserDirectory, "isDeactivated">,
  principalId: string,
  workspaceId: string,
): AccessCheck {
  return () => {
    refuseDeactivated(users, principalId);
    if (workspaces.roleOf(workspaceId, principalId) === undefined) throw new WorkspaceNotFound(workspaceId);
  };
}

/**
 * `access`, and then a role the write needs, asked at the same commit point: a write only an admin
 * may make, by an admin demoted while it waited on a lock or the disk, is refused there with
 * `refusal()`, the error the role's first check gives (adr/0154, amended). Someone no longer a
 * member at all (removed, or the workspace archived) is refused as `access` refuses them, with the
 * wall's 404, even where `access` is `NO_CALLER`.
 */
export function withRoleRequired(
  access: AccessCheck,
  workspaces: Pick<WorkspaceStore, "roleOf">,
  principalId: string,
  workspaceId: string,
  role: WorkspaceRole,
  refusal: () => Error,
): AccessCheck {
  return () => {
    access();
    const held = workspaces.roleOf(workspaceId, principalId);
    if (held === undefined) throw new WorkspaceNotFound(workspaceId);
    if (held !== role) throw refusal();
  };
}
