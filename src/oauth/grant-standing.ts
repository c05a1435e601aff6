import { type BegunUnder, begunUnderEarlierStanding } from "../identity/standing.ts";
import type { UserDirectory } from "../identity/users.ts";
import { type BegunAsMember, begunInCurrentMembership } from "../workspace/membership-id.ts";
import type { Member } from "../workspace/model.ts";
import type { GrantRecord } from "./grant-record.ts";

/**
 * `principalId`'s membership of the workspace now; `undefined` when they are not a member of it or
 * it does not exist.
 */
export type MemberOf = (principalId: string, workspaceId: string) => Member | undefined;

export interface Standing {
  users: Pick<UserDirectory, "isDeactivated" | "standingOf">;
  memberOf: MemberOf;
}

/**
 * When a consent was given, the id of the person's standing then and of their membership of the
 * workspace it is for (ADR 0169 and its amendments).
 */
export type Consent = BegunUnder & BegunAsMember;

const DEACTIVATED = "The person who approved this access has been deactivated.";
const DEACTIVATED_SINCE =
  "The person who approved this access has been deactivated since (and reactivated); authorize again.";
const NOT_A_MEMBER =
  "The person who approved this access is not a member of its workspace (or it is gone), or left it since; authorize again.";

/**
 * Why `principalId` may no longer hold access to `workspaceId` under a consent given `consented`:
 * deactivated now or since (under another standing, told by its id, standing.ts), not a member of
 * the workspace, or rejoined it since (another membership, told by its id, membership-id.ts, as a
 * connection grant counts only when made in its member's current
 * membership). Deactivation revokes only the grants that exist: a code approved before it and
 * redeemed after a reactivation within its 60 s made a grant
 * (test/integration/leaving.test.ts "a code approved before a deactivation").
 */
export function standingRefusal(
  { users, memberOf }: Standing,
  principalId: string,
  workspaceId: string,
  consented: Consent,
): string | undefined {
  if (users.isDeactivated(principalId)) return DEACTIVATED;
  if (begunUnderEarlierStanding(users.standingOf(principalId), consented)) return DEACTIVATED_SINCE;
  const member = memberOf(principalId, workspaceId);
  return member === undefined || !begunInCurrentMembership(member, consented) ? NOT_A_MEMBER : undefined;
}

/** A grant's consent as its standing is judged: when it was made, under which standing, in which membership. */
export function consentOf(record: Pick<GrantRecord, "createdAt" | "standingId" | "membershipId">): Consent {
  return {
    at: record.createdAt,
    standingId: record.standingId,
    membershipId: record.membershipId,
  };
}
