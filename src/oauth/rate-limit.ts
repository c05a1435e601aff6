import { type Clock, systemClock } from "../kernel/clock.ts";

/** Forgotten windows are purged once this many callers are tracked, so the map stays bounded. */
const PURGE_AT = 10_000;

/**
 * A fixed-window counter per caller: at most `max` takes per `windowMs`. It guards open
 * registration, where each success writes a file, from filling the disk. In memory on
 * purpose: a restart forgets counts, which only ever errs toward letting clients in.
 */
export class FixedWindowLimit {
  private readonly windows = new Map<string, { startedAt: number; count: number }>();

  constructor(
    private readonly max: number,
    private readonly windowMs: number,
    private readonly clock: Clock = systemClock,
  ) {}

  /** Counts one take for `key`; returns the seconds to wait when over the limit, else 0. */
  take(key: string): number {
    const now = this.clock();
    if (this.windows.size >= PURGE_AT) this.purge(now);
    let window = this.windows.get(key);
    if (!window || now - window.startedAt >= this.windowMs) {
      window = { startedAt: now, count: 0 };
      this.windows.set(key, window);
    }
    if (window.count >= this.max) return Math.ceil((window.startedAt + this.windowMs - now) / 1000);
    window.count += 1;
    return 0;
  }

  private purge(now: number): void {
    for (const [key, window] of this.windows) {
      if (now - window.startedAt >= this.windowMs) this.windows.delete(key);
    }
  }
}
