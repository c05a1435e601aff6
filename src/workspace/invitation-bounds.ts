import { Conflict } from "../errors.ts";
import { type Invitation, type Invitee, inviteeKey } from "./invitation.ts";

/** Pending invitations one workspace may hold at once (ADR 0070). */
export const MAX_PENDING_PER_WORKSPACE = 100;
/**
 * Pending invitations one person may have sent, across every workspace of the instance. With at
 * most one pending invitation per invitee in a workspace, this is what bounds how many one
 * sender can put on a stranger's home page, however many workspaces they create (ADR 0070).
 */
export const MAX_PENDING_PER_INVITER = 200;

/**
 * Refuses an invitation to `invitee` that what is pending leaves no room for (409): a second for
 * the same invitee as named (`invitation_exists`), past the workspace's bound or past its
 * sender's (`too_many_invitations`). `toWorkspace` and `sentBy` are the pending invitations to
 * the workspace and from the sender, read under both their keys (`Invitations.create`), the
 * workspace's naming a member revoked just before. `membersOf` is `membersByKey` for a workspace.
 */
export async function refuseBeyondBounds(
  invitee: Invitee,
  toWorkspace: Invitation[],
  sentBy: Invitation[],
  membersOf: (workspaceId: string) => Promise<Map<string, string>>,
): Promise<void> {
  const key = inviteeKey(invitee);
  if (toWorkspace.some((invitation) => inviteeKey(invitation.invitee) === key)) {
    throw new Conflict(
      "invitation_exists",
      "That person already has a pending invitation to this workspace; revoke it first to send another.",
    );
  }
  if (toWorkspace.length >= MAX_PENDING_PER_WORKSPACE) {
    throw new Conflict(
      "too_many_invitations",
      `A workspace holds at most ${MAX_PENDING_PER_WORKSPACE} pending invitations; revoke some first.`,
    );
  }
  if (
    sentBy.length >= MAX_PENDING_PER_INVITER &&
    (await listed(sentBy, membersOf)) >= MAX_PENDING_PER_INVITER
  ) {
    throw new Conflict(
      "too_many_invitations",
      `One person may have at most ${MAX_PENDING_PER_INVITER} pending invitations across all workspaces; revoke some first.`,
    );
  }
}

/**
 * How many of `sent` their workspaces' lists show: one naming a member of its workspace is
 * hidden, and counts against no bound (ADR 0131, amended). Its own workspace revokes it at its
 * next invitation; in the sender's other workspaces it waits for housekeeping, whose keys this
 * does not take, so it is left out here instead. Read only at the bound, once per workspace.
 */
async function listed(
  sent: Invitation[],
  membersOf: (workspaceId: string) => Promise<Map<string, string>>,
): Promise<number> {
  const membersByWorkspace = new Map<string, Map<string, string>>();
  let count = 0;
  for (const invitation of sent) {
    let members = membersByWorkspace.get(invitation.workspaceId);
    if (!members) {
      members = await membersOf(invitation.workspaceId);
      membersByWorkspace.set(invitation.workspaceId, members);
    }
    if (!members.has(inviteeKey(invitation.invitee))) count += 1;
  }
  return count;
}
