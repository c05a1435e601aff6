import { Cron } from "croner";
import type { Logger } from "../log.ts";
import { forEachAtMost } from "./at-most.ts";
import type { Clock } from "./clock.ts";
import type { LeaseHolder } from "./leases.ts";
import type { Timers } from "./timers.ts";

/**
 * When a job is due: `everyMs` after it was added and then after each time it fell due (a
 * process that was suspended runs once on waking, not once per missed interval; a wall clock
 * stepped back delays it by one interval, not by the step), or on a cron expression.
 */
export type Schedule = { everyMs: number } | { cron: string; timezone?: string };

/** Process-wide work (housekeeping). */
export interface GlobalJob {
  name: string;
  schedule: Schedule;
  run(): Promise<void>;
}

/** Work done once per workspace, only for the workspaces whose lease this process holds. */
export interface WorkspaceJob {
  name: string;
  schedule: Schedule;
  workspaces(): Iterable<string>;
  /**
   * `scheduledMs` is the instant the run was due: earlier than the clock when the process was
   * suspended, or its event loop busy, past it (a task records it as the instant it ran for).
   */
  run(workspaceId: string, scheduledMs: number): Promise<void>;
  /**
   * How many workspaces one run does at once; one unless said. A job that waits on other
   * servers (the connections' health loops) takes more, so one workspace's hanging servers do not
   * hold up every other workspace's turn.
   */
  concurrency?: number;
}

export type Job = GlobalJob | WorkspaceJob;

export interface SchedulerDeps {
  clock: Clock;
  timers: Timers;
  leases: LeaseHolder;
  log: Logger;
}

// Node's timers run on the monotonic clock, which stops while the machine is suspended and does
// not follow a wall clock stepped forward, while a due time is a wall-clock instant: one timer
// for the whole gap ran a daily 09:00 job at 17:00 after an 8 h suspend, and an hourly one at
// 10:30 after a 30 min step at 09:30. So no timer waits longer than this before the clock is read
// again ("woken early" below re-arms); it also keeps under Node's limit of 2^31 - 1 ms, past
// which a timer fires at once (scheduler.test.ts "after an 8 h suspend", "stepped 30 min forward").
const WALL_CLOCK_RECHECK_MS = 60_000;

interface Entry {
  job: Job;
  /** An interval job's interval; undefined for a cron job, whose dates are wall-clock ones. */
  everyMs: number | undefined;
  next(afterMs: number): number | undefined;
  dueMs: number | undefined;
  cancel?: () => void;
  running?: Promise<void>;
}

/**
 * Runs named jobs on intervals or cron expressions (parsed by croner, never by hand). A job
 * never overlaps itself: a run still going when the next is due is skipped and logged. A
 * throwing job is logged and keeps its schedule. `stop()` cancels what is pending and waits
 * for what runs (graceful drain, ADR 0023). Time comes from the injected clock and timers,
 * so tests move time instead of waiting for it (test/unit/kernel/scheduler.test.ts).
 */
export class Scheduler {
  private readonly entries = new Map<string, Entry>();
  private stopped = false;

  constructor(private readonly deps: SchedulerDeps) {}

  /** Adds a job and arms it. Refuses a duplicate name, a bad interval or a bad cron expression. */
  add(job: Job): void {
    if (this.stopped) throw new Error(`Scheduler is stopped; job "${job.name}" was not added`);
    if (this.entries.has(job.name)) throw new Error(`A job named "${job.name}" is already scheduled`);
    const entry: Entry = {
      job,
      everyMs: "everyMs" in job.schedule ? job.schedule.everyMs : undefined,
      next: nextFor(job),
      dueMs: undefined,
    };
    entry.dueMs = entry.next(this.deps.clock());
    this.entries.set(job.name, entry);
    this.arm(entry);
  }

  /**
   * Forgets a job: its pending run is cancelled, a run in progress ends on its own. Whether there
   * was one. A job whose schedule changes (a task's trigger) is removed and added again.
   */
  remove(name: string): boolean {
    const entry = this.entries.get(name);
    if (!entry) return false;
    entry.cancel?.();
    entry.dueMs = undefined;
    this.entries.delete(name);
    return true;
  }

  /** Whether a job of this name is scheduled. */
  has(name: string): boolean {
    return this.entries.has(name);
  }

  /** Whether `stop()` has begun: nothing is added or run from then on. */
  isStopped(): boolean {
    return this.stopped;
  }

  /** The names of the jobs with a run in progress (what a stop cut short leaves running). */
  runningJobs(): string[] {
    return [...this.entries.values()].filter((entry) => entry.running).map((entry) => entry.job.name);
  }

  /** Cancels every pending run and resolves once the runs in progress have ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    const running: Promise<void>[] = [];
    for (const entry of this.entries.values()) {
      entry.cancel?.();
      if (entry.running) running.push(entry.running);
    }
    await Promise.all(running);
  }

  private arm(entry: Entry): void {
    if (this.stopped || entry.dueMs === undefined) return;
    const delayMs = Math.min(Math.max(0, entry.dueMs - this.deps.clock()), WALL_CLOCK_RECHECK_MS);
    entry.cancel = this.deps.timers.after(delayMs, () => this.fire(entry));
  }

  private fire(entry: Entry): void {
    if (this.stopped || entry.dueMs === undefined) return;
    const now = this.deps.clock();
    // The wall clock stepped back (an NTP correction) since the job was armed: its due time, read
    // from the clock before the step, is further off than one interval ever is. Due one interval
    // from now instead, or a 200 ms job would wait out the whole step (an hour back: an hour).
    if (entry.everyMs !== undefined && entry.dueMs - now > entry.everyMs) entry.dueMs = now + entry.everyMs;
    // Woken early (a capped delay, or the step above): wait the rest.
    if (now < entry.dueMs) {
      this.arm(entry);
      return;
    }
    const scheduledMs = entry.dueMs;
    entry.dueMs = entry.next(now);
    this.arm(entry);
    if (entry.running) {
      this.deps.log.warn({ job: entry.job.name }, "scheduled job still running; this run is skipped");
      return;
    }
    entry.running = this.runOnce(entry.job, scheduledMs).finally(() => {
      entry.running = undefined;
    });
  }

  private async runOnce(job: Job, scheduledMs: number): Promise<void> {
    if (!("workspaces" in job)) return this.guarded(job.name, undefined, () => job.run());
    await forEachAtMost(job.workspaces(), job.concurrency ?? 1, async (workspaceId) => {
      if (this.stopped) return;
      // One process per root holds every lease today (ADR 0022); the seam is what a
      // scale-out replaces, so a replica never does another replica's workspaces.
      if (!this.deps.leases.holds(workspaceId)) return;
      await this.guarded(job.name, workspaceId, () => job.run(workspaceId, scheduledMs));
    });
  }

  private async guarded(name: string, workspaceId: string | undefined, run: () => Promise<void>) {
    try {
      await run();
    } catch (error) {
      this.deps.log.warn(
        { job: name, workspaceId, err: error },
        "scheduled job failed; it keeps its schedule",
      );
    }
  }
}

function nextFor(job: Job): (afterMs: number) => number | undefined {
  const schedule = job.schedule;
  if ("everyMs" in schedule) {
    if (!Number.isSafeInteger(schedule.everyMs) || schedule.everyMs <= 0) {
      throw new Error(
        `Job "${job.name}": everyMs must be a positive whole number of ms, got ${schedule.everyMs}`,
      );
    }
    return (afterMs) => afterMs + schedule.everyMs;
  }
  let cron: Cron;
  try {
    // No callback and paused: croner only computes dates here; the scheduler owns the timers.
    cron = new Cron(schedule.cron, {
      paused: true,
      ...(schedule.timezone ? { timezone: schedule.timezone } : {}),
    });
  } catch (error) {
    throw new Error(
      `Job "${job.name}": invalid cron expression "${schedule.cron}": ${(error as Error).message}`,
    );
  }
  return (afterMs) => cron.nextRun(new Date(afterMs))?.getTime();
}
