import type { Clock } from "../../src/kernel/clock.ts";
import type { Timers } from "../../src/kernel/timers.ts";

interface Pending {
  dueMs: number;
  fire: () => void;
}

/** A clock and timers a test moves by hand, so nothing waits for time to pass. */
export class FakeTime {
  private pending: Pending[] = [];

  constructor(private nowMs = Date.UTC(2026, 0, 1)) {}

  readonly clock: Clock = () => this.nowMs;

  readonly timers: Timers = {
    after: (delayMs, fire) => {
      const entry = { dueMs: this.nowMs + delayMs, fire };
      this.pending.push(entry);
      return () => {
        this.pending = this.pending.filter((p) => p !== entry);
      };
    },
  };

  /**
   * Moves the clock forward, firing every timer that falls due on the way, in order, and
   * letting promise callbacks run after each, as they would between real timer ticks.
   */
  async advance(ms: number): Promise<void> {
    const target = this.nowMs + ms;
    for (;;) {
      const due = this.pending.filter((p) => p.dueMs <= target).sort((a, b) => a.dueMs - b.dueMs)[0];
      if (!due) break;
      this.pending = this.pending.filter((p) => p !== due);
      this.nowMs = Math.max(this.nowMs, due.dueMs);
      due.fire();
      await settle();
    }
    this.nowMs = target;
  }

  /** Moves the clock without firing anything, as a suspended process sees it on waking. */
  jump(ms: number): void {
    this.nowMs += ms;
  }

  /** How many timers are armed. */
  armed(): number {
    return this.pending.length;
  }
}

/** Lets promise callbacks (a job's awaits) run before the test looks. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
