import { type Clock, isWithin, systemClock } from "../kernel/clock.ts";

/**
 * Per-workspace values built on first use and disposed when idle, so an instance with many
 * idle workspaces pays disk, not memory. The idle sweep never disposes a value in use; an
 * explicit `evict` (a workspace archived) does, because nothing may use it any more.
 */
export class IdleCache<T> {
  private readonly entries = new Map<string, { value: Promise<T>; lastUsed: number; inUse: number }>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly build: (key: string) => Promise<T>,
    private readonly dispose: (value: T) => Promise<void>,
    private readonly idleMs: number,
    private readonly clock: Clock = systemClock,
  ) {
    this.timer = setInterval(() => void this.sweep(), Math.max(1_000, Math.floor(idleMs / 2)));
    this.timer.unref();
  }

  async use<R>(key: string, work: (value: T) => Promise<R>): Promise<R> {
    let entry = this.entries.get(key);
    if (!entry) {
      const value = this.build(key);
      entry = { value, lastUsed: this.clock(), inUse: 0 };
      this.entries.set(key, entry);
      value.catch(() => {
        if (this.entries.get(key) === entry) this.entries.delete(key);
      });
    }
    entry.inUse += 1;
    try {
      return await work(await entry.value);
    } finally {
      entry.inUse -= 1;
      entry.lastUsed = this.clock();
    }
  }

  /** The value for `key` if it has been built, without building it or counting as a use. */
  async peek(key: string): Promise<T | undefined> {
    return this.entries.get(key)?.value.catch(() => undefined);
  }

  get size(): number {
    return this.entries.size;
  }

  async evict(key: string): Promise<void> {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    // A build that failed has nothing to dispose.
    await entry.value.then((value) => this.dispose(value)).catch(() => undefined);
  }

  async sweep(now = this.clock()): Promise<void> {
    for (const [key, entry] of this.entries) {
      // Last used after now: the clock was stepped back since, and its idle time is unknown (ADR 0168).
      if (entry.inUse === 0 && !isWithin(now, entry.lastUsed, this.idleMs)) await this.evict(key);
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await Promise.all([...this.entries.keys()].map((key) => this.evict(key)));
  }
}
