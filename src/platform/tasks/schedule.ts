import { Cron } from "croner";
import type { UserDirectory } from "../../identity/users.ts";
import type { Clock } from "../../kernel/clock.ts";
import type { Scheduler } from "../../kernel/scheduler.ts";
import type { Logger } from "../../log.ts";
import { storageFullReason } from "../../storage/storage-full.ts";
import { NO_CALLER } from "../../workspace/access-check.ts";
import type { WorkspaceStore } from "../../workspace/store.ts";
import { checkTrigger } from "./definition.ts";
import type { Task, TaskTrigger } from "./model.ts";
import { ConcurrencyLimit, Stopping, type TaskRunner } from "./runner.ts";
import type { TaskStore } from "./store.ts";

const STORAGE_FULL_SKIP =
  "task schedule instant not run: the storage is full; the next instant runs once for it, as missed, once space has been freed";

export interface ScheduleDeps {
  scheduler: Scheduler;
  runner: TaskRunner;
  store: TaskStore;
  workspaces: Pick<WorkspaceStore, "get" | "roleOf">;
  users: Pick<UserDirectory, "isDeactivated">;
  clock: Clock;
  log: Logger;
  /** tasks.minIntervalSeconds, which a stored trigger is held to again when it is armed. */
  minIntervalSeconds: number;
}

/** The schedule instants a restart missed: the first and the latest, or none. */
export interface Missed {
  firstMs: number;
  latestMs: number;
}

/**
 * Each task with a trigger is one job on the kit's scheduler, a per-workspace job so that it runs
 * only where this process holds the workspace's lease (ADR 0031). A fire starts a run with
 * trigger `schedule` and records the instant on the task (`lastScheduledAt`), which is what a
 * restart catches up from: schedules missed while Atrium was down run once, at boot, recording
 * the latest missed instant and the first (test/integration/tasks.test.ts "missed schedules").
 * A schedule whose owner has left or been deactivated is recorded failed once (the runner refuses
 * it and the workspace is told); later ones are skipped until the owner is active again. A fire
 * whose run a graceful stop refuses leaves its instant unaccounted for, so the next boot runs it;
 * one a full disk refuses, so the next fire (or boot) runs once for it, as missed.
 */
export class TaskSchedules {
  /** Set once boot has armed the index's tasks: a load's tasks are adopted from then on. */
  private adopting = false;

  constructor(private readonly deps: ScheduleDeps) {}

  /**
   * (Re)arms the task's job to its current trigger; a task without one has none, and neither has
   * one whose trigger today's rules refuse (stored before a rule, or before tasks.minIntervalSeconds
   * was raised): it is logged, and runs again once its owner updates the trigger. True when armed.
   */
  arm(task: Task): boolean {
    const name = jobName(task);
    this.deps.scheduler.remove(name);
    // A graceful stop stops the scheduler while requests drain: a task written then is in the
    // schedule index already, so the next boot arms it, and its request answers what it stored
    // (test/integration/tasks-stopping.test.ts "a trigger set while a graceful stop drains").
    if (!task.trigger || this.deps.scheduler.isStopped()) return false;
    const { workspaceId, id, trigger } = task;
    const refused = triggerRefusal(trigger, this.deps.minIntervalSeconds);
    if (refused) {
      this.deps.log.warn({ workspaceId, taskId: id, reason: refused }, "task trigger not armed");
      return false;
    }
    this.deps.scheduler.add({
      name,
      schedule:
        "cron" in trigger
          ? { cron: trigger.cron, timezone: trigger.timezone }
          : { everyMs: trigger.everySeconds * 1000 },
      workspaces: () => [workspaceId],
      // The instant it was due, not the clock's: a process suspended over it runs it on waking,
      // and one suspended over several instants runs once for the latest, as a restart does
      // (schedule.test.ts "a fire after a suspend").
      run: async (_workspaceId, dueMs) => {
        const missed = missedOf(trigger, dueMs, this.deps.clock());
        try {
          await (missed
            ? this.fire(workspaceId, id, missed.latestMs, dueMs)
            : this.fire(workspaceId, id, dueMs));
        } catch (error) {
          const reason = storageFullReason(error);
          if (reason === undefined) throw error;
          // Its instant is not recorded (or was put back): the next fire catches it up as missed.
          this.deps.log.warn(
            {
              workspaceId,
              taskId: id,
              scheduledFor: new Date(missed?.latestMs ?? dueMs).toISOString(),
              reason,
            },
            STORAGE_FULL_SKIP,
          );
        }
      },
    });
    return true;
  }

  disarm(task: Pick<Task, "workspaceId" | "id">): void {
    this.deps.scheduler.remove(jobName(task));
  }

  /**
   * A workspace's tasks as a load read them: a triggered task with no job is one the schedule
   * index did not name (a task file copied in by hand): it is indexed and armed. A task deleted
   * or untriggered while the load read it is disarmed by its next fire, and dropped from the index
   * at the next boot.
   */
  async adopt(tasks: readonly Task[]): Promise<void> {
    if (!this.adopting) return;
    for (const task of tasks) {
      if (!task.trigger || this.deps.scheduler.has(jobName(task))) continue;
      await this.deps.store.index.addSchedule(task);
      this.arm(task);
    }
  }

  /**
   * At boot: every triggered task (read from the schedule index, ADR 0056) is armed, and one whose
   * schedule was missed runs once now. Only the job is kept: a fire reads the task afresh. A
   * trigger today's rules refuse is not armed and has no catch-up either: it would run at every
   * boot (schedule.test.ts "no catch-up for a trigger not armed"). A catch-up that fails is logged
   * and the boot goes on, as a scheduled fire that fails is logged and keeps its schedule
   * (kernel/scheduler.ts): one task whose stored input schema refuses a schedule's empty input, or
   * whose run's record cannot be written, must not keep the whole instance from starting
   * (test/integration/tasks-boot-catch-up.test.ts "a missed schedule that fails at boot"; ADR 0143).
   * Working out what was missed is part of the catch-up, guarded with it; a stored instant that is
   * not a date has nothing caught up, said once here, and the task keeps its job (a cron's
   * computation threw out of the boot; "a stored time that is not a date").
   */
  async armAll(triggered: readonly Task[]): Promise<void> {
    this.adopting = true;
    for (const task of triggered) {
      if (!this.arm(task)) continue;
      try {
        if (catchUpFromMs(task) === undefined) {
          this.deps.log.warn(
            { workspaceId: task.workspaceId, taskId: task.id },
            "a task's stored lastScheduledAt (or createdAt, if it has none) is not a date: no missed schedule is caught up at boot; the task keeps its schedule",
          );
          continue;
        }
        const missed = missedSince(task, this.deps.clock());
        if (missed) await this.fire(task.workspaceId, task.id, missed.latestMs, missed.firstMs);
      } catch (error) {
        this.deps.log.warn(
          { workspaceId: task.workspaceId, taskId: task.id, err: error },
          "a missed schedule's catch-up at boot failed; the task keeps its schedule",
        );
      }
    }
  }

  private async fire(
    workspaceId: string,
    taskId: string,
    scheduledMs: number,
    missedMs?: number,
  ): Promise<void> {
    // Loads the workspace's tasks if they are not in memory (a schedule is a use); an archived
    // workspace's are not loaded.
    const active = this.deps.workspaces.get(workspaceId) !== undefined;
    const task = active ? await this.deps.store.taskIn(workspaceId, taskId) : undefined;
    if (!task?.trigger) {
      // Deleted, untriggered or archived since the job was armed: nothing more to schedule.
      this.disarm({ workspaceId, id: taskId });
      return;
    }
    const scheduledFor = new Date(scheduledMs).toISOString();
    if (accountedFor(task, scheduledMs, this.deps.clock())) {
      this.deps.log.info(
        { workspaceId, taskId, scheduledFor, lastScheduledAt: task.lastScheduledAt },
        "task schedule instant already accounted for (the wall clock went back past it): not run again",
      );
      return;
    }
    // A cron instant before this one that no fire recorded (its record or its run refused by a
    // full disk) is missed, and this run stands for it as a restart's catch-up would.
    const sinceMs = firstUnaccountedMs(task, scheduledMs, missedMs);
    const ownerActive =
      this.deps.workspaces.roleOf(workspaceId, task.ownerId) !== undefined &&
      !this.deps.users.isDeactivated(task.ownerId);
    if (!ownerActive && task.ownerInactiveSince !== undefined) {
      // Told once already: each later schedule is skipped quietly until the owner is back (or
      // an admin deletes the task), so an hourly task does not fill the inbox with one warning.
      await this.deps.store.update(
        task,
        (current) => ({ ...current, lastScheduledAt: scheduledFor }),
        NO_CALLER,
      );
      return;
    }
    // The instant is recorded as acted on before its run starts: a crash between the two leaves
    // it run (and recorded interrupted) or not run, never caught up again as missed at the next
    // boot, which would run it twice. A graceful stop between the two puts it back (putBack).
    const recorded = await this.deps.store.update(
      task,
      (current) => {
        const { ownerInactiveSince: _was, ...rest } = current;
        return ownerActive
          ? { ...rest, lastScheduledAt: scheduledFor }
          : { ...rest, lastScheduledAt: scheduledFor, ownerInactiveSince: scheduledFor };
      },
      NO_CALLER,
    );
    if (!recorded?.trigger) {
      // Deleted or untriggered while this fire read it: the copy read before is not run.
      this.disarm({ workspaceId, id: taskId });
      return;
    }
    try {
      // Under the task's lock, from the task as it is then: a delete that began since finds no
      // run to miss, and this start finds no task (schedule.test.ts "a fire racing a delete").
      await this.deps.store.whileExists(recorded, (current) =>
        current.trigger
          ? this.deps.runner.start(current, {
              trigger: "schedule",
              startedBy: current.ownerId,
              input: {},
              scheduledFor,
              ...(sinceMs === undefined ? {} : { missedSince: new Date(sinceMs).toISOString() }),
              // No member's call starts it, and the owner's access is not asked here: it was
              // decided above (`ownerActive`), and a run whose owner is gone is recorded, failed,
              // once on purpose, so the workspace is told. The run's tool call asks the owner's
              // access itself, through the dispatch's caller (adr/0154).
              access: NO_CALLER,
            })
          : Promise.resolve(undefined),
      );
    } catch (error) {
      if (error instanceof Stopping) {
        await this.putBack(task, scheduledFor);
        this.deps.log.info(
          { workspaceId, taskId, scheduledFor },
          "task schedule due as Atrium stops: not run now, caught up at the next boot",
        );
        return;
      }
      // The run's record could not be written: the instant goes back to being missed, so the next
      // fire (or boot) runs it once; if the put-back is refused too, the instant is lost.
      if (storageFullReason(error) !== undefined) {
        await this.putBack(task, scheduledFor);
        throw error;
      }
      if (!(error instanceof ConcurrencyLimit)) throw error;
      // Limits hold across triggers: a schedule that finds the task at its limit is skipped.
      this.deps.log.warn(
        { workspaceId, taskId, scheduledFor },
        "task at its concurrency limit; this schedule is skipped",
      );
    }
  }

  /**
   * A fire whose run a graceful stop (or a full disk) refused, its instant recorded as acted on
   * already: the task's schedule fields go back to what they were before the fire (`before`), unless
   * a later fire has moved them since, so the next boot (or fire) catches the instant up as missed,
   * once, with `missedSince` (schedule.test.ts "a fire racing a graceful stop"; ADR 0107;
   * schedule-full-disk.test.ts).
   */
  private async putBack(before: Task, scheduledFor: string): Promise<void> {
    await this.deps.store.update(
      before,
      (current) => {
        if (current.lastScheduledAt !== scheduledFor) return current;
        const { lastScheduledAt: _at, ownerInactiveSince: _since, ...rest } = current;
        return {
          ...rest,
          ...(before.lastScheduledAt === undefined ? {} : { lastScheduledAt: before.lastScheduledAt }),
          ...(before.ownerInactiveSince === undefined
            ? {}
            : { ownerInactiveSince: before.ownerInactiveSince }),
        };
      },
      NO_CALLER,
    );
  }
}

/**
 * When the run for `scheduledMs` stands for missed instants, the first of them: `missedMs` as the
 * fire was given it, or, for a cron, an earlier instant after the task's `lastScheduledAt` that no
 * fire recorded, because the disk was full when it fell due (its record refused, or its run's and
 * the record put back): caught up by the next fire as a restart would catch it up, once, never
 * run on its own (test/integration/tasks-cron-instant-caught-up-after-full-disk.test.ts; adr/0165
 * amended). An interval's instants are not named by the wall clock, so only `missedMs` counts.
 */
function firstUnaccountedMs(
  task: Task,
  scheduledMs: number,
  missedMs: number | undefined,
): number | undefined {
  const sinceMs = catchUpFromMs(task);
  if (!task.trigger || !("cron" in task.trigger) || sinceMs === undefined) return missedMs;
  const { cron, timezone } = task.trigger;
  const firstMs = new Cron(cron, { paused: true, timezone }).nextRun(new Date(sinceMs))?.getTime();
  if (firstMs === undefined || firstMs >= scheduledMs) return missedMs;
  return Math.min(firstMs, missedMs ?? firstMs);
}

function jobName(task: Pick<Task, "workspaceId" | "id">): string {
  return `task ${task.workspaceId} ${task.id}`;
}

/**
 * Whether a cron instant is at or before the task's `lastScheduledAt`, so accounted for already:
 * run, or before the trigger was set. Every fire asks it, scheduled or caught up: a job is armed
 * from the clock (kernel/scheduler.ts), at a boot as at a trigger's change, and after a wall clock
 * stepped back past an instant that ran (an NTP correction), a restart armed that same instant
 * again and ran it twice (test/integration/tasks-cron-instant-once-after-clock-step.test.ts). An
 * interval's instants are counted from when its job was armed, not named by the wall clock: a step
 * back delays it by one interval at most, never by the step. A stored time that is not a date
 * (written by hand), or one further ahead of the clock than STEP_BACK_HELD_AT_MOST_MS, holds nothing
 * back: that is a clock that ran ahead (a wrong clock at boot) and was set right, not a correction,
 * and holding back to it silenced the task until the clock caught up, for months (adr/0168).
 */
function accountedFor(task: Task, scheduledMs: number, nowMs: number): boolean {
  if (!task.trigger || !("cron" in task.trigger) || task.lastScheduledAt === undefined) return false;
  const lastMs = Date.parse(task.lastScheduledAt);
  return !Number.isNaN(lastMs) && scheduledMs <= lastMs && lastMs - nowMs <= STEP_BACK_HELD_AT_MOST_MS;
}

/** The furthest a task's lastScheduledAt may be ahead of the clock and still hold its instants back. */
const STEP_BACK_HELD_AT_MOST_MS = 24 * 60 * 60 * 1000;

/**
 * The instant a task's missed schedules count from: the last it acted on, or when it was made;
 * undefined when that stored time is not a date (a task file edited by hand).
 */
export function catchUpFromMs(task: Task): number | undefined {
  const sinceMs = Date.parse(task.lastScheduledAt ?? task.createdAt);
  return Number.isNaN(sinceMs) ? undefined : sinceMs;
}

/**
 * The instants of the task's trigger after the last it acted on (or after its trigger was set)
 * and not after `nowMs`: the first and the latest of them, or undefined when none was missed or
 * the time they count from is not a date.
 */
export function missedSince(task: Task, nowMs: number): Missed | undefined {
  const sinceMs = catchUpFromMs(task);
  if (!task.trigger || sinceMs === undefined) return undefined;
  return missedOf(task.trigger, sinceMs, nowMs);
}

export function missedOf(trigger: TaskTrigger, sinceMs: number, nowMs: number): Missed | undefined {
  if ("everySeconds" in trigger) {
    const everyMs = trigger.everySeconds * 1000;
    const count = Math.floor((nowMs - sinceMs) / everyMs);
    return count < 1 ? undefined : { firstMs: sinceMs + everyMs, latestMs: sinceMs + count * everyMs };
  }
  const cron = new Cron(trigger.cron, { paused: true, timezone: trigger.timezone });
  const first = cron.nextRun(new Date(sinceMs))?.getTime();
  if (first === undefined || first > nowMs) return undefined;
  // croner's previousRuns answers instants strictly before the date it is given: one exactly at
  // `nowMs` counts, as it does for an interval, since the job armed now is due only after it
  // (schedule.test.ts "a cron instant exactly at now").
  const latest = cron.previousRuns(1, new Date(nowMs + 1))[0]?.getTime() ?? first;
  return { firstMs: first, latestMs: Math.max(first, latest) };
}

/** Why a stored trigger may not fire under today's rules, or undefined when it may. */
function triggerRefusal(trigger: TaskTrigger, minIntervalSeconds: number): string | undefined {
  try {
    checkTrigger(trigger, minIntervalSeconds);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}
