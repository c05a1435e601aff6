import { type BegunUnder, begunUnderEarlierStanding } from "../identity/standing.ts";
import type { UserDirectory } from "../identity/users.ts";
import type { GrantRecord } from "./grant-record.ts";

/**
 * When `principalId` (last) joined the workspace, in epoch ms; `undefined` when they are not a
 * member of it or it does not exist.
 */
export type MemberSince = (principalId: string, workspaceId: string) => number | undefined;

export interface Standing {
  users: Pick<UserDirectory, "isDeactivated" | "standingOf">;
  memberSince: MemberSince;
}

const DEACTIVATED = "The person who approved this access has been deactivated.";
const DEACTIVATED_SINCE =
  "The person who approved this access has been deactivated since (and reactivated); authorize again.";
const NOT_A_MEMBER =
  "The person who approved this access is not a member of its workspace (or it is gone), or left it since; authorize again.";

/**
 * Why `principalId` may no longer hold access to `workspaceId` under a consent given `consented`:
 * deactivated now or since (under an earlier standing generation, standing.ts), not a member of
 * the workspace, or rejoined it since (as a connection grant counts only when made since its
 * member last joined). Deactivation revokes only the grants that exist: a code approved before
 * it and redeemed after a reactivation within its 60 s made a grant
 * (test/integration/leaving.test.ts "a code approved before a deactivation").
 */
export function standingRefusal(
  { users, memberSince }: Standing,
  principalId: string,
  workspaceId: string,
  consented: BegunUnder,
): string | undefined {
  if (users.isDeactivated(principalId)) return DEACTIVATED;
  if (begunUnderEarlierStanding(users.standingOf(principalId), consented)) return DEACTIVATED_SINCE;
  const joinedAt = memberSince(principalId, workspaceId);
  return joinedAt === undefined || joinedAt > consented.at ? NOT_A_MEMBER : undefined;
}

/** A grant's consent as its standing is judged: when it was made, and under which generation. */
export function consentOf(record: Pick<GrantRecord, "createdAt" | "standingGeneration">): BegunUnder {
  return { at: record.createdAt, generation: record.standingGeneration };
}
