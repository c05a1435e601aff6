/** Epoch milliseconds now. Injected so expiry is tested by moving a clock, not by sleeping. */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();

/** How far apart Atrium's clock and a token's `iat`/`exp` may be; keys outlive their tokens by this too. */
export const CLOCK_TOLERANCE_SECONDS = 60;

/**
 * Whether `now` is less than `ms` after `since`. A clock stepped back behind `since` is not: what
 * was kept as fresh at `since` is checked again, instead of until the clock has caught up with it.
 */
export function isWithin(now: number, since: number, ms: number): boolean {
  return now >= since && now - since < ms;
}
