import type { UserDirectory } from "../identity/users.ts";
import type { Invitation } from "./invitation.ts";
import { roleIn, type Workspace } from "./model.ts";

/**
 * Whether an invitation still speaks for its sender: they are an admin of `workspace`, as given,
 * and not deactivated (ADR 0069). Asked of the workspace as the index holds it, and again of the
 * one an acceptance is about to write.
 */
export function senderStandsIn(
  users: Pick<UserDirectory, "isDeactivated">,
  workspace: Workspace | undefined,
  { invitedBy }: Pick<Invitation, "invitedBy">,
): boolean {
  return roleIn(workspace, invitedBy) === "admin" && !users.isDeactivated(invitedBy);
}

/** Whether the invitation's time to be answered is over at `now` (epoch ms). */
export function expiredAt(invitation: Pick<Invitation, "expiresAt">, now: number): boolean {
  return Date.parse(invitation.expiresAt) <= now;
}

/** How every list of invitations is ordered: oldest first, then by id. */
export function oldestFirst(a: Invitation, b: Invitation): number {
  return a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id);
}
