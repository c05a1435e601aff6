import { type Clock, isWithin, systemClock } from "../kernel/clock.ts";
import { systemTimers, type Timers } from "../kernel/timers.ts";

/**
 * A bound on what a cache holds, by an approximate size per value: past `maxBytes` in all, the
 * least recently used values not in use are let go before their idle time (adr/0179).
 */
export interface ByteBudget<T> {
  /** The bytes a value holds, roughly; asked once it is built and after each use, which may grow it. */
  sizeOf: (value: T) => number;
  maxBytes: number;
}

/** The instance's clock and timers (tests and bench/memory move fake ones), and an optional byte budget. */
export interface IdleCacheOptions<T> {
  clock?: Clock;
  timers?: Timers;
  budget?: ByteBudget<T>;
}

interface Entry<T> {
  value: Promise<T>;
  lastUsed: number;
  inUse: number;
  /** sizeOf at its last measure; 0 until built, and always without a budget. */
  bytes: number;
}

/**
 * Per-workspace values built on first use and disposed when idle, so an instance with many
 * idle workspaces pays disk, not memory. The idle sweep never disposes a value in use; an
 * explicit `evict` (a workspace archived) does, because nothing may use it any more. With a byte
 * budget, the entries are kept in the order of their last use, least recent first.
 */
export class IdleCache<T> {
  private readonly entries = new Map<string, Entry<T>>();
  private readonly clock: Clock;
  private readonly timers: Timers;
  private readonly budget: ByteBudget<T> | undefined;
  /** The armed sweep's cancel; armed only while something is held, so an empty cache waits on nothing. */
  private cancelSweep: (() => void) | undefined;
  private closed = false;
  private heldBytes = 0;

  constructor(
    private readonly build: (key: string) => Promise<T>,
    private readonly dispose: (value: T) => Promise<void>,
    private readonly idleMs: number,
    options: IdleCacheOptions<T> = {},
  ) {
    this.clock = options.clock ?? systemClock;
    // The instance's timers, not Node's own: on a fake clock the sweep falls due with it, so what
    // an instance keeps after its idle windows can be measured (bench/memory) and tested.
    this.timers = options.timers ?? systemTimers;
    this.budget = options.budget;
  }

  async use<R>(key: string, work: (value: T) => Promise<R>): Promise<R> {
    let entry = this.entries.get(key);
    if (!entry) {
      const value = this.build(key);
      const created: Entry<T> = { value, lastUsed: this.clock(), inUse: 0, bytes: 0 };
      entry = created;
      this.entries.set(key, created);
      this.armSweep();
      value.catch(() => {
        if (this.entries.get(key) === created) void this.drop(key, created);
      });
    }
    entry.inUse += 1;
    let built: { value: T } | undefined;
    try {
      built = { value: await entry.value };
      return await work(built.value);
    } finally {
      entry.inUse -= 1;
      entry.lastUsed = this.clock();
      if (built) this.measure(key, entry, built.value);
    }
  }

  /** The value for `key` if it has been built, without building it or counting as a use. */
  async peek(key: string): Promise<T | undefined> {
    return this.entries.get(key)?.value.catch(() => undefined);
  }

  get size(): number {
    return this.entries.size;
  }

  /** What the values held weigh by the budget's sizeOf; 0 without a budget. */
  get bytes(): number {
    return this.heldBytes;
  }

  async evict(key: string): Promise<void> {
    const entry = this.entries.get(key);
    if (entry) await this.drop(key, entry);
  }

  async sweep(now = this.clock()): Promise<void> {
    for (const [key, entry] of this.entries) {
      // Last used after now: the clock was stepped back since, and its idle time is unknown (ADR 0168).
      if (entry.inUse === 0 && !isWithin(now, entry.lastUsed, this.idleMs)) await this.evict(key);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.cancelSweep?.();
    this.cancelSweep = undefined;
    await Promise.all([...this.entries.keys()].map((key) => this.evict(key)));
  }

  private armSweep(): void {
    if (this.closed || this.cancelSweep) return;
    this.cancelSweep = this.timers.after(Math.max(1_000, Math.floor(this.idleMs / 2)), () => {
      this.cancelSweep = undefined;
      void this.sweep().then(() => {
        if (this.entries.size > 0) this.armSweep();
      });
    });
  }

  /** Counts a value's size after a use, moves it to the most recent end, and keeps to the budget. */
  private measure(key: string, entry: Entry<T>, value: T): void {
    // Evicted meanwhile (archived, or over the budget while built): not held, not counted.
    if (!this.budget || this.entries.get(key) !== entry) return;
    this.entries.delete(key);
    this.entries.set(key, entry);
    const bytes = this.budget.sizeOf(value);
    this.heldBytes += bytes - entry.bytes;
    entry.bytes = bytes;
    this.keepToBudget(this.budget.maxBytes);
  }

  /**
   * Lets go of the least recently used values until the rest fit, skipping those in use: a use
   * relies on its value staying while it runs (the catalog's add, until its entry is in it).
   */
  private keepToBudget(maxBytes: number): void {
    for (const [key, entry] of this.entries) {
      if (this.heldBytes <= maxBytes) return;
      if (entry.inUse === 0) void this.drop(key, entry);
    }
  }

  /** Forgets the entry at once, then disposes its value; a build that failed has nothing to dispose. */
  private async drop(key: string, entry: Entry<T>): Promise<void> {
    this.entries.delete(key);
    this.heldBytes -= entry.bytes;
    await entry.value.then((value) => this.dispose(value)).catch(() => undefined);
  }
}
