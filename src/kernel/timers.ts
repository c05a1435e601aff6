/**
 * How the scheduler waits: one seam, so a test moves a fake clock and fires what is due
 * instead of sleeping (test/helpers/fake-time.ts). Returns the cancel.
 */
export interface Timers {
  after(delayMs: number, fire: () => void): () => void;
}

/** Node's own timers, unref'd: scheduled work alone never keeps the process alive. */
export const systemTimers: Timers = {
  after(delayMs, fire) {
    const timer = setTimeout(fire, delayMs);
    timer.unref();
    return () => clearTimeout(timer);
  },
};
