import { randomSecret } from "../../crypto/secrets.ts";
import { type Clock, isWithin, systemClock } from "../../kernel/clock.ts";
import { FixedWindowLimit } from "../rate-limit.ts";

/** How long a parked request waits for its person to sign in, as long as a consent page lives. */
export const PARKED_TTL_MS = 10 * 60 * 1000;
/** At most this many wait at once; with MAX_PARKED_QUERY_CHARS, at most 8 MiB. */
export const MAX_PARKED = 500;
/** Node's own limit on a request's headers (16 KiB) is the longest query that can arrive. */
export const MAX_PARKED_QUERY_CHARS = 16 * 1024;
const HOUR_MS = 60 * 60 * 1000;
const PARKED_ID = /^[A-Za-z0-9_-]{32}$/;

/**
 * Authorization requests too long to ride through sign-in in `return_to`
 * (MAX_RETURN_TO_CHARS), kept while their person signs in and resumed by a short id
 * (ADR 0073). In memory on purpose: a signed-out GET, which any page can make a browser
 * send, must not write to disk (pending.ts), and a restart only costs the person a clear
 * "start again". Bounded in count, per address and in size, so strangers cannot fill memory.
 */
export class ParkedRequests {
  // Insertion order is parking order, so the expired are at the front. A request parked after
  // now (the clock was stepped back since) has expired too (isWithin): judged by an expiry ahead
  // of the clock, it lived the whole step, and the expired parked after it piled up behind it
  // until MAX_PARKED refused every new one (parked.test.ts "stepped back").
  private readonly parked = new Map<string, { query: string; parkedAt: number }>();
  private readonly limit: FixedWindowLimit;

  /** `perAddressPerHour`: instance.json `oauth.parkedRequestsPerHour`. */
  constructor(
    perAddressPerHour: number,
    private readonly clock: Clock = systemClock,
  ) {
    this.limit = new FixedWindowLimit(perAddressPerHour, HOUR_MS, clock);
  }

  /** Keeps `query` (an /oauth/authorize query string) and returns its id; `undefined` when there is no room. */
  park(query: string, caller: string): string | undefined {
    if (query.length > MAX_PARKED_QUERY_CHARS) return undefined;
    this.dropExpired();
    if (this.parked.size >= MAX_PARKED || this.limit.take(caller) > 0) return undefined;
    const id = randomSecret(24);
    this.parked.set(id, { query, parkedAt: this.clock() });
    return id;
  }

  /** The query parked under `id`, until it expires; it may be resumed more than once (a reload). */
  find(id: string): string | undefined {
    if (!PARKED_ID.test(id)) return undefined;
    const parked = this.parked.get(id);
    return parked && isWithin(this.clock(), parked.parkedAt, PARKED_TTL_MS) ? parked.query : undefined;
  }

  private dropExpired(): void {
    const now = this.clock();
    for (const [id, parked] of this.parked) {
      if (isWithin(now, parked.parkedAt, PARKED_TTL_MS)) return;
      this.parked.delete(id);
    }
  }
}
