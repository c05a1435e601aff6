import type { Member, Workspace } from "./model.ts";

/** What a member began and recorded: when, and the membership generation it was begun under. */
export interface BegunAsMember {
  /** Epoch ms. */
  at: number;
  /** Absent in records written before membership generations were kept (ADR 0169, amended). */
  membershipGeneration?: number;
}

/** The generation `member`'s membership was made under: 0 for one added before they were kept. */
export function membershipGenerationOf(member: Member): number {
  return member.membershipGeneration ?? 0;
}

/**
 * The generation the workspace's next join takes: one past every one it has handed out. The
 * members are counted too, so a counter a hand edit lowered never hands out a generation a
 * member holds.
 */
export function nextMembershipGeneration(ws: Workspace): number {
  let last = ws.lastMembershipGeneration ?? 0;
  for (const member of ws.members) last = Math.max(last, membershipGenerationOf(member));
  return last + 1;
}

/**
 * Whether what `begun` names was begun during `member`'s current membership, not one they have
 * left since: a consent (an authorization code, an OAuth grant) or a connection grant counts only
 * then. Judged by generation, never by comparing `addedAt` with the record's stamp: a clock stepped
 * back after a join made every consent "older" than it until the clock passed `addedAt`, and a
 * removal and re-add stamped before an old consent let it back in
 * (test/integration/membership-clock-step-back.test.ts). A generation other than the member's is
 * refused, greater included (a workspace.json restored from a backup).
 *
 * A record without a generation was written before generations were kept: if the member's
 * membership was counted (generation above 0), it began after that record, which is refused; if
 * not, it is judged as before, by `addedAt` at or before the record's stamp.
 */
export function begunInCurrentMembership(member: Member, begun: BegunAsMember): boolean {
  const generation = membershipGenerationOf(member);
  if (begun.membershipGeneration !== undefined) return begun.membershipGeneration === generation;
  if (generation > 0) return false;
  return Date.parse(member.addedAt) <= begun.at;
}
