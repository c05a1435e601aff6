import { isIPv4, isIPv6 } from "node:net";
import { type Clock, isWithin, systemClock } from "../kernel/clock.ts";

/** At most this many callers are counted at once; past it the oldest window is dropped. */
export const MAX_WINDOWS = 10_000;
const MAPPED_IPV4 = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i;

/**
 * The caller a per-address limit counts: an IPv4 address as it is (an IPv4-mapped IPv6 one as
 * its IPv4), an IPv6 address by its /64, the smallest block a site is given, so one host cannot
 * take a fresh window per address of its prefix; anything else as it is.
 */
export function limitKeyOf(address: string): string {
  const mapped = MAPPED_IPV4.exec(address)?.[1];
  if (mapped !== undefined && isIPv4(mapped)) return mapped;
  const zoneless = address.split("%")[0] ?? address;
  if (!isIPv6(zoneless)) return address;
  const [head = "", tail] = zoneless.split("::");
  const headGroups = head === "" ? [] : head.split(":");
  const tailGroups = tail === undefined || tail === "" ? [] : tail.split(":");
  // A dotted IPv4 ending is two groups, and only ever in the last two.
  const tailWidth = tailGroups.reduce((width, group) => width + (group.includes(".") ? 2 : 1), 0);
  const zeros = tail === undefined ? [] : new Array<string>(8 - headGroups.length - tailWidth).fill("0");
  const groups = [...headGroups, ...zeros, ...tailGroups].slice(0, 4);
  return `${groups.map((group) => Number.parseInt(group, 16).toString(16)).join(":")}::/64`;
}

/**
 * A fixed-window counter per caller: at most `max` takes per `windowMs`. It guards open
 * registration, where each success writes a file, from filling the disk, and the parked
 * requests and metadata fetches from one caller. In memory on purpose: a restart forgets counts,
 * which only ever errs toward letting clients in. Callers are keyed by `limitKeyOf`.
 *
 * Bounded: at most MAX_WINDOWS callers, the oldest window dropped when a new one would pass it.
 * A window is (re)inserted when it starts, so the map is in start order and the expired are at
 * its front; they are purged at most once per window length, from the front. Before, past
 * 10,000 callers every take() scanned the whole map, and nothing capped its size.
 */
export class FixedWindowLimit {
  private readonly windows = new Map<string, { startedAt: number; count: number }>();
  private lastPurgeAt: number;

  constructor(
    private readonly max: number,
    private readonly windowMs: number,
    private readonly clock: Clock = systemClock,
    private readonly maxWindows: number = MAX_WINDOWS,
  ) {
    this.lastPurgeAt = clock();
  }

  /** Counts one take for `address`; returns the seconds to wait when over the limit, else 0. */
  take(address: string): number {
    const now = this.clock();
    if (!isWithin(now, this.lastPurgeAt, this.windowMs)) this.purge(now);
    const key = limitKeyOf(address);
    let window = this.windows.get(key);
    // A window that starts after now (the clock was stepped back) has ended: kept, it refused the
    // caller for the whole step, told to retry after it (rate-limit.test.ts "stepped back").
    if (!window || !isWithin(now, window.startedAt, this.windowMs)) {
      this.windows.delete(key);
      if (this.windows.size >= this.maxWindows) this.dropOldest();
      window = { startedAt: now, count: 0 };
      this.windows.set(key, window);
    }
    if (window.count >= this.max) return Math.ceil((window.startedAt + this.windowMs - now) / 1000);
    window.count += 1;
    return 0;
  }

  /** How many callers are counted now; for tests. */
  get size(): number {
    return this.windows.size;
  }

  private purge(now: number): void {
    this.lastPurgeAt = now;
    for (const [key, window] of this.windows) {
      if (isWithin(now, window.startedAt, this.windowMs)) return;
      this.windows.delete(key);
    }
  }

  private dropOldest(): void {
    const oldest = this.windows.keys().next();
    if (!oldest.done) this.windows.delete(oldest.value);
  }
}
