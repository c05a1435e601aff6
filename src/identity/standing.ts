/**
 * A person's standing as the user directory holds it, for judging what they began earlier: a
 * browser session, a consent (an authorization code, an OAuth grant).
 */
export interface PersonStanding {
  /**
   * Counts the reactivations the profile has recorded; 0 for a profile no reactivation has written
   * since it was kept. Written with the profile, so it is the same after a restart, and it only
   * grows: ordering by it does not read a clock, which can step back (ADR 0169). A deactivation
   * needs no count: until the reactivation every use is refused by the deactivation itself.
   */
  generation: number;
  /** When the person was last reactivated, epoch ms; read only for a record that kept no generation. */
  reactivatedAt?: number;
}

/** When a session or a consent began: its stamp, and the person's generation then. */
export interface BegunUnder {
  /** Epoch ms. */
  at: number;
  /** Absent in records written before generations were kept (ADR 0169). */
  generation?: number;
}

/**
 * Whether what began under `begun` was begun under an earlier standing than the person's now: a
 * deactivation, and the reactivation after it, ended it (whether the person is deactivated now is
 * asked apart). A deactivation is how a stolen laptop is shut out, and a reactivation must not let
 * it back in. Judged by generation, never by comparing two wall-clock stamps: a clock stepped back
 * after a reactivation stamped every new sign-in and consent "before" it, and locked the person out
 * until the clock passed it (test/integration/reactivation-clock-step-back.test.ts). A generation
 * other than today's is refused, greater included (a profile restored from a backup): nothing is
 * admitted that the directory cannot place.
 *
 * A record without a generation was written before generations were kept: if a reactivation has
 * counted since, the record is older than it, and refused; if none has, it is judged as before, by
 * its stamp against `reactivatedAt` (at or before it is refused: one millisecond does not order
 * them).
 */
export function begunUnderEarlierStanding(person: PersonStanding, begun: BegunUnder): boolean {
  if (begun.generation !== undefined) return begun.generation !== person.generation;
  if (person.generation > 0) return true;
  return person.reactivatedAt !== undefined && person.reactivatedAt >= begun.at;
}
