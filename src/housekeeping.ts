import type { Logger } from "./log.ts";

/** How often expired records (codes, consent requests, grants, sessions) and crash leftovers are removed. */
export const HOUSEKEEPING_INTERVAL_MS = 60 * 60 * 1000;

export interface Chore {
  name: string;
  run(): Promise<void>;
}

/**
 * Runs each chore once an interval, one after another, so an instance that never restarts
 * does not keep every code and consent request it ever issued. A failing chore is logged
 * and tried again next time; it never stops the others or the process. Returns the stop.
 */
export function startHousekeeping(
  chores: Chore[],
  log: Logger,
  intervalMs = HOUSEKEEPING_INTERVAL_MS,
): () => void {
  let running = false;
  const timer = setInterval(async () => {
    if (running) return;
    running = true;
    for (const chore of chores) {
      try {
        await chore.run();
      } catch (error) {
        log.warn({ chore: chore.name, err: error }, "housekeeping chore failed; it runs again next interval");
      }
    }
    running = false;
  }, intervalMs);
  // Housekeeping alone never keeps the process alive.
  timer.unref();
  return () => clearInterval(timer);
}
