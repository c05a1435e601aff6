import { isRandomId, newRandomId } from "../ids.ts";

const STANDING_ID_PREFIX = "stn";

/**
 * A new standing's id: 128 random bits, drawn at each reactivation. Random, not counted: a count
 * kept in profile.json went back with a restored backup, and the next reactivation handed out again
 * the number a session or consent begun before a later deactivation held, so it counted again
 * (test/unit/identity/sessions-standing.test.ts "restored from a backup"; ADR 0169, amended later
 * still).
 */
export function newStandingId(): string {
  return newRandomId(STANDING_ID_PREFIX);
}

export function isStandingId(value: unknown): value is string {
  return isRandomId(STANDING_ID_PREFIX, value);
}

/**
 * A person's standing as the user directory holds it, for judging what they began earlier: a
 * browser session, a consent (an authorization code, an OAuth grant).
 */
export interface PersonStanding {
  /**
   * The id their last reactivation drew (`stn_` + 32 hex), written with the profile, so it is the
   * same after a restart and reads no clock, which can step back (ADR 0169). Absent for a person not
   * reactivated since ids were kept. A deactivation draws none: until the reactivation every use is
   * refused by the deactivation itself.
   */
  standingId?: string;
  /** When the person was last reactivated, epoch ms; read only for a record that kept no id. */
  reactivatedAt?: number;
}

/** When a session or a consent began: its stamp, and the person's standing id then. */
export interface BegunUnder {
  /** Epoch ms. */
  at: number;
  /**
   * Absent in records written before standing ids were kept, and in those begun by a person who
   * held none (ADR 0169, amended later still).
   */
  standingId?: string;
}

/**
 * Whether what began under `begun` was begun under an earlier standing than the person's now: a
 * deactivation, and the reactivation after it, ended it (whether the person is deactivated now is
 * asked apart). A deactivation is how a stolen laptop is shut out, and a reactivation must not let
 * it back in. Judged by the standing's id, never by comparing two wall-clock stamps: a clock
 * stepped back after a reactivation stamped every new sign-in and consent "before" it, and locked
 * the person out until the clock passed it (test/integration/reactivation-clock-step-back.test.ts).
 *
 * A record without an id was written before ids were kept, or by a person who held none. If the
 * person holds one, a reactivation drew it after that record, which is refused; if not, it is
 * judged as before ids, by its stamp against `reactivatedAt` (at or before it is refused: one
 * millisecond does not order them). A record with an id against a person without one (a
 * profile.json restored from before ids) is refused. A numeric `standingGeneration` that
 * development builds wrote for a while is not read: it counts as no id.
 */
export function begunUnderEarlierStanding(person: PersonStanding, begun: BegunUnder): boolean {
  if (person.standingId !== undefined) return begun.standingId !== person.standingId;
  if (begun.standingId !== undefined) return true;
  return person.reactivatedAt !== undefined && person.reactivatedAt >= begun.at;
}
