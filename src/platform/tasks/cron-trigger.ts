import { Cron, CronPattern } from "croner";
import { InvalidInput } from "../../errors.ts";

const DAY_SECONDS = 24 * 60 * 60;

/**
 * Refuses a cron expression croner cannot parse, one that never fires (the 30th of February, a
 * year gone by) and one that fires more often than `minIntervalSeconds` — as `everySeconds` is
 * held to it: a seconds field made "* * * * * *" a run every second.
 */
export function checkCron(cron: string, timezone: string, minIntervalSeconds: number): void {
  let job: Cron;
  let pattern: CronPattern;
  try {
    // Parsed by croner, never by hand; paused, it only computes dates.
    job = new Cron(cron, { paused: true, timezone });
    pattern = new CronPattern(cron, timezone);
  } catch (error) {
    throw new InvalidInput(`"trigger.cron" is not a cron expression: ${(error as Error).message}`);
  }
  if (job.nextRun() === null) {
    throw new InvalidInput(
      `"trigger.cron" "${cron}" never fires: no date to come has that day of the month in that month (and year, when one is given).`,
    );
  }
  const gap = shortestGapSeconds(pattern);
  if (gap < minIntervalSeconds) {
    throw new InvalidInput(
      `"trigger.cron" "${cron}" fires ${gap} second${gap === 1 ? "" : "s"} apart, and a task's trigger fires at most every ${minIntervalSeconds} seconds (tasks.minIntervalSeconds): give fewer seconds, minutes or hours.`,
    );
  }
}

/**
 * The least time between two fires on the clock: every day that fires, fires at the same times of
 * day (its seconds × minutes × hours), so the closest two are neighbours among those times, or the
 * day's last and the next day's first when both days fire (counted as if they always did). A
 * fall-back hour can bring two fires closer once a year; every zone offset in use today is whole
 * minutes, so never under a minute while the seconds field has one value.
 */
function shortestGapSeconds(pattern: CronPattern): number {
  const times: number[] = [];
  for (let hour = 0; hour < 24; hour++) {
    if (!pattern.hour[hour]) continue;
    for (let minute = 0; minute < 60; minute++) {
      if (!pattern.minute[minute]) continue;
      for (let second = 0; second < 60; second++) {
        if (pattern.second[second]) times.push(hour * 3600 + minute * 60 + second);
      }
    }
  }
  const first = times[0] ?? 0;
  let gap = first + DAY_SECONDS - (times.at(-1) ?? 0);
  for (let i = 1; i < times.length; i++) gap = Math.min(gap, (times[i] as number) - (times[i - 1] as number));
  return gap;
}
