import type { Scheduler } from "./kernel/scheduler.ts";
import type { Logger } from "./log.ts";
import { type ArchiveRetention, purgeExpiredArchives } from "./storage/archive-retention.ts";

/** How often expired records (codes, consent requests, grants, sessions) and crash leftovers are removed. */
export const HOUSEKEEPING_INTERVAL_MS = 60 * 60 * 1000;

export interface Chore {
  name: string;
  run(): Promise<void>;
}

/**
 * Schedules each chore once an interval, one after another, so an instance that never
 * restarts does not keep every code and consent request it ever issued. A failing chore is
 * logged and tried again next time; it never stops the others or the process. A round still
 * going when the next is due is skipped by the scheduler, and its stop() waits for a round
 * in progress. `stillOurs` (the root's lock) is asked before each chore.
 */
export function scheduleHousekeeping(
  scheduler: Scheduler,
  chores: Chore[],
  log: Logger,
  intervalMs = HOUSEKEEPING_INTERVAL_MS,
  stillOurs: () => Promise<boolean> = async () => true,
): void {
  scheduler.add({
    name: "housekeeping",
    schedule: { everyMs: intervalMs },
    run: async () => {
      for (const [index, chore] of chores.entries()) {
        // Every chore writes or deletes in the root: once another process holds it, none more
        // does (the heartbeat's stop comes up to a beat later; ADR 0146).
        if (!(await stillOurs())) {
          log.warn(
            { notRun: chores.slice(index).map(({ name }) => name) },
            "housekeeping stopped: the instance lock is no longer this process's",
          );
          return;
        }
        try {
          await chore.run();
        } catch (error) {
          log.warn(
            { chore: chore.name, err: error },
            "housekeeping chore failed; it runs again next interval",
          );
        }
      }
    },
  });
}

/** The chore that removes archived workspaces past their retention, when one is set (ADR 0113). */
export function archiveChores(
  retentionDays: number | undefined,
  retention: Omit<ArchiveRetention, "retentionMs">,
): Chore[] {
  if (retentionDays === undefined) return [];
  const retentionMs = retentionDays * 24 * 60 * 60 * 1000;
  return [
    {
      name: "archived workspaces",
      run: async () => {
        const { stopped } = await purgeExpiredArchives({ ...retention, retentionMs });
        if (stopped === undefined) return;
        retention.log.warn(
          { notReached: stopped.expired.map(({ name }) => name).concat(stopped.cutShort) },
          "archived workspaces' removal stopped: the instance lock is no longer this process's",
        );
      },
    },
  ];
}
