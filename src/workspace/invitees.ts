import { Conflict } from "../errors.ts";
import { foldEmail, type UserDirectory } from "../identity/users.ts";
import { type Invitation, type Invitee, inviteeKey } from "./invitation.ts";
import type { Workspace } from "./model.ts";

/**
 * Whom an invitation names, as the user directory knows people now. An invitee is kept as the
 * admin wrote it (ADR 0027), so one person may be named by their id and by their address at
 * once; these read the directory to tie the two together. Creating an invitation reads only
 * the workspace's own members here (`refuseMember`), so it still looks nobody else up.
 */
export type InviteeDirectory = Pick<UserDirectory, "get" | "findByEmail">;

/** The invitee keys that name the person: their id, and the address the directory records for them. */
export async function keysNaming(users: InviteeDirectory, principalId: string): Promise<Set<string>> {
  const keys = new Set([inviteeKey({ principalId })]);
  const email = await recordedEmail(users, principalId);
  if (email) keys.add(inviteeKey({ email }));
  return keys;
}

/**
 * The members of the workspace by the invitee keys that name them (a later member wins a shared
 * address). Every member's address is read, whoever the caller then looks for, so using this to
 * refuse an invitation reads the same records whether or not the invitee is known (ADR 0069).
 */
export async function membersByKey(
  users: InviteeDirectory,
  workspace: Workspace | undefined,
): Promise<Map<string, string>> {
  const members = new Map<string, string>();
  for (const { principalId } of workspace?.members ?? []) {
    for (const key of await keysNaming(users, principalId)) members.set(key, principalId);
  }
  return members;
}

/**
 * Refuses to invite a member of the workspace, the sender included: named by id, or by an
 * address the directory records for a member. `members` is `membersByKey`, which reads the same
 * members whoever is named, so this tells the admin nothing the member list does not and ADR
 * 0027's "no lookup" holds for everyone who is not a member.
 */
export function refuseMember(members: Map<string, string>, invitee: Invitee, invitedBy: string): void {
  const member = members.get(inviteeKey(invitee));
  if (member === undefined) return;
  throw new Conflict(
    "member_exists",
    member === invitedBy
      ? "You are already a member of this workspace; an invitation cannot add you again."
      : "That person is already a member of this workspace; change their role instead.",
  );
}

/**
 * Whether the person may answer the invitation: it names their id, or an address
 * the directory records for them alone (a verified one: the directory keeps no other).
 */
export async function isFor(
  users: InviteeDirectory,
  { invitee }: Pick<Invitation, "invitee">,
  principalId: string,
): Promise<boolean> {
  if ("principalId" in invitee) return invitee.principalId === principalId;
  return ownsEmail(users, principalId, invitee.email);
}

/** The address the directory records for the person, folded as invitations compare it. */
export async function recordedEmail(
  users: InviteeDirectory,
  principalId: string,
): Promise<string | undefined> {
  const recorded = (await users.get(principalId))?.email;
  return recorded == null ? undefined : foldEmail(recorded);
}

export async function ownsEmail(
  users: InviteeDirectory,
  principalId: string,
  email: string,
): Promise<boolean> {
  try {
    return (await users.findByEmail(email))?.id === principalId;
  } catch (error) {
    // Two people signed in with the address: it is neither's to claim; invite by id instead.
    if (error instanceof Conflict) return false;
    throw error;
  }
}
