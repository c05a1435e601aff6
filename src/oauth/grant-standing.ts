import type { UserDirectory } from "../identity/users.ts";

/**
 * When `principalId` (last) joined the workspace, in epoch ms; `undefined` when they are not a
 * member of it or it does not exist.
 */
export type MemberSince = (principalId: string, workspaceId: string) => number | undefined;

export interface Standing {
  users: Pick<UserDirectory, "isDeactivated" | "reactivatedAt">;
  memberSince: MemberSince;
}

const DEACTIVATED = "The person who approved this access has been deactivated.";
const DEACTIVATED_SINCE =
  "The person who approved this access has been deactivated since (and reactivated); authorize again.";
const NOT_A_MEMBER =
  "The person who approved this access is not a member of its workspace (or it is gone), or left it since; authorize again.";

/**
 * Why `principalId` may no longer hold access to `workspaceId` under a consent given at
 * `consentedAt`: deactivated now or since (reactivated at or after it), not a member of the
 * workspace, or rejoined it since (as a connection grant counts only when made since its
 * member last joined). Deactivation revokes only the grants that exist: a code approved before
 * it and redeemed after a reactivation within its 60 s made a grant
 * (test/integration/leaving.test.ts "a code approved before a deactivation").
 */
export function standingRefusal(
  { users, memberSince }: Standing,
  principalId: string,
  workspaceId: string,
  consentedAt: number,
): string | undefined {
  if (users.isDeactivated(principalId)) return DEACTIVATED;
  const reactivatedAt = users.reactivatedAt(principalId);
  // At or after: a consent and a reactivation in one millisecond cannot be ordered, so it is refused.
  if (reactivatedAt !== undefined && reactivatedAt >= consentedAt) return DEACTIVATED_SINCE;
  const joinedAt = memberSince(principalId, workspaceId);
  return joinedAt === undefined || joinedAt > consentedAt ? NOT_A_MEMBER : undefined;
}
