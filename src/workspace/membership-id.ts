import { isRandomId, newRandomId } from "../ids.ts";
import type { Member } from "./model.ts";

const MEMBERSHIP_ID_PREFIX = "mbs";

/**
 * A new membership's id: 128 random bits, drawn at the join. Random, not counted: a count kept in
 * workspace.json went back with a restored backup and handed a former member's number out again,
 * so what they began in the membership they left counted in the new one
 * (test/unit/workspace/membership-id.test.ts "restored from a backup"; ADR 0169, amended later).
 */
export function newMembershipId(): string {
  return newRandomId(MEMBERSHIP_ID_PREFIX);
}

export function isMembershipId(value: unknown): value is string {
  return isRandomId(MEMBERSHIP_ID_PREFIX, value);
}

/** What a member began and recorded: when, and the id of the membership it was begun in. */
export interface BegunAsMember {
  /** Epoch ms. */
  at: number;
  /**
   * Absent in records written before membership ids were kept, and in those begun by a member
   * added before then, who holds none (ADR 0169, amended).
   */
  membershipId?: string;
}

/**
 * Whether what `begun` names was begun during `member`'s current membership, not one they have
 * left since: a consent (an authorization code, an OAuth grant) or a connection grant counts only
 * then. Judged by the membership's id, never by comparing `addedAt` with the record's stamp: a
 * clock stepped back after a join made every consent "older" than it until the clock passed
 * `addedAt`, and a removal and re-add stamped before an old consent let it back in
 * (test/integration/membership-clock-step-back.test.ts).
 *
 * A record without an id was written before ids were kept, or by a member who holds none. If the
 * member holds one, their membership began after that record, which is refused; if not, it is
 * judged as before ids, by `addedAt` at or before the record's stamp. A `membershipGeneration`
 * number that development builds wrote for a while is not read: it counts as no id.
 */
export function begunInCurrentMembership(member: Member, begun: BegunAsMember): boolean {
  if (member.membershipId !== undefined) return begun.membershipId === member.membershipId;
  if (begun.membershipId !== undefined) return false;
  return Date.parse(member.addedAt) <= begun.at;
}
