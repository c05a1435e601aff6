/** Epoch milliseconds now. Injected so expiry is tested by moving a clock, not by sleeping. */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();

/** How far apart Atrium's clock and a token's `iat`/`exp` may be; keys outlive their tokens by this too. */
export const CLOCK_TOLERANCE_SECONDS = 60;
