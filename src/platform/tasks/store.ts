import type { Clock } from "../../kernel/clock.ts";
import type { Timers } from "../../kernel/timers.ts";
import type { Logger } from "../../log.ts";
import { IdleCache } from "../../sources/idle-cache.ts";
import { KeyedLock } from "../../storage/keyed-lock.ts";
import type { PartitionPaths, StorageLayout } from "../../storage/paths.ts";
import type { LeftoverRules, RecoveryPass } from "../../storage/recovery.ts";
import type { AccessCheck } from "../../workspace/access-check.ts";
import { TaskBootIndex } from "./boot-index.ts";
import type { RecordRef } from "./damaged-records.ts";
import { IdempotencyKeys } from "./idempotency.ts";
import { type LoadedRuns, LoadedWorkspace, type LoadHooks, type UnreadableTask } from "./loaded.ts";
import type { Run, Task } from "./model.ts";
import type { ResultFiles } from "./result-files.ts";
import { readAgain, readRuns } from "./run-reads.ts";
import { forgetOrphanRuns, forgetRunRecord } from "./run-removal.ts";
import { raiseSequence, takeSequence } from "./run-sequence.ts";
import { TaskFiles } from "./task-files.ts";
import { triggeredAtBoot } from "./triggered-at-boot.ts";
import { unscheduleUnwritten } from "./unwritten-schedule.ts";

/** A workspace's loaded tasks are dropped after this long unused, as its source registry is. */
export const TASKS_IDLE_MS = 10 * 60 * 1000;

/** What a create's bounds count: the workspace's tasks, and those stored whose record is damaged. */
export interface StoredTasks {
  tasks: readonly Task[];
  unreadable: readonly UnreadableTask[];
}

export interface TaskStoreOptions {
  clock: Clock;
  /** What the idle sweep waits on; Node's own when not given. */
  timers?: Timers;
  /** How long an `Idempotency-Key` is honoured (instance.json's `tasks.idempotencyWindowHours`). */
  idempotencyWindowMs: number;
  /** Deletes a run's result file before its record goes; false keeps the record (ADR 0079). */
  results: Pick<ResultFiles, "discard">;
  /** Where a task's or run's record that does not parse is said, once (damaged-records.ts). */
  log: Logger;
  idleMs?: number;
}

/**
 * Tasks and their runs, on disk under the owner's partition (task-files.ts). A workspace's tasks
 * are loaded on first use, and the order of its runs and its idempotency keys when a call first
 * needs them (loaded.ts); both are kept by these writers while in use, so a list never walks the disk (CRAFT:
 * the filesystem is not a database); they are dropped when idle (TASKS_IDLE_MS), so an instance
 * with many idle workspaces pays disk, not memory. A run's record is read from disk when asked
 * for. Boot reads only the instance-wide index (boot-index.ts): the tasks with a trigger and the
 * workspaces a crash left runs `running` in (ADR 0056).
 */
export class TaskStore implements LeftoverRules {
  readonly index: TaskBootIndex;
  private readonly files: TaskFiles;
  private readonly loaded: IdleCache<LoadedWorkspace>;
  /**
   * One change of a task at a time — an update (its schedule entry and loaded copy included), a
   * run's start, its deletion — so a start never falls between a delete's finding the task's runs
   * and its removing them, and an update never puts a deleted task back in memory.
   */
  private readonly taskLocks = new KeyedLock();
  /** One create per workspace at a time: its bounds count what is written (ADR 0079). */
  private readonly createLocks = new KeyedLock();
  private hooks: LoadHooks = {
    loaded: async () => undefined,
    unfinished: async () => undefined,
    orphaned: () => undefined,
  };

  constructor(
    storage: PartitionPaths,
    layout: StorageLayout,
    private readonly options: TaskStoreOptions,
  ) {
    this.index = new TaskBootIndex(layout);
    this.files = new TaskFiles(storage, options.log);
    this.loaded = new IdleCache(
      (workspaceId) => this.load(workspaceId),
      async () => undefined,
      options.idleMs ?? TASKS_IDLE_MS,
      { clock: options.clock, timers: options.timers },
    );
  }

  /** Who is shown what a load reads, before the load answers anyone (LoadHooks). */
  onLoad(hooks: LoadHooks): void {
    this.hooks = hooks;
  }

  /**
   * At boot: the tasks with a trigger in the active workspaces (triggered-at-boot.ts), and the
   * workspaces a crash left marked loaded now, which records their unfinished runs.
   */
  async boot(activeIds: () => Iterable<string>, isActive: (workspaceId: string) => boolean) {
    const triggered = await triggeredAtBoot(this.index, this.files, activeIds, isActive);
    for (const workspaceId of await this.index.runningMarks()) {
      if (isActive(workspaceId)) await this.withRuns(workspaceId, async () => undefined);
      await this.index.clearRunning(workspaceId);
    }
    return triggered;
  }

  /** Every task of a workspace, whoever owns it; the caller filters by who may see them. */
  all(workspaceId: string): Promise<Task[]> {
    return this.loaded.use(workspaceId, async (loaded) => [...loaded.tasks.values()]);
  }

  taskIn(workspaceId: string, taskId: string): Promise<Task | undefined> {
    return this.loaded.use(workspaceId, async (loaded) => loaded.tasks.get(taskId));
  }

  /** The task of that id the load left out, its record damaged or unreadable; undefined when none. */
  leftOut(workspaceId: string, taskId: string): Promise<UnreadableTask | undefined> {
    return this.loaded.use(workspaceId, async (loaded) =>
      loaded.unreadable.find((task) => task.id === taskId),
    );
  }

  /**
   * Writes a new task. `admit` is shown the workspace's stored tasks first, those whose record is
   * damaged included (a restore brings them back), and throws to refuse it; one create of a
   * workspace runs at a time, so creates at once cannot both pass a bound
   * (test/integration/tasks-damaged.test.ts "counted against the bounds"). Here and in `update`,
   * `delete` and `createRun`, `access` (its caller's, adr/0154) is asked under the record's lock
   * just before the one step that makes the write seen: refused, its refusal is thrown and nothing
   * is left of the write — no record, no schedule entry, nothing in memory; for a run, no event and
   * no idempotency key (the start failed, runner.ts).
   */
  async create(task: Task, access: AccessCheck, admit?: (stored: StoredTasks) => void): Promise<Task> {
    return this.createLocks.run(task.workspaceId, async () => {
      admit?.(
        await this.loaded.use(task.workspaceId, async (loaded) => ({
          tasks: [...loaded.tasks.values()],
          unreadable: [...loaded.unreadable],
        })),
      );
      // Indexed before it is written: a crash between leaves an entry boot drops, never a lost schedule.
      if (task.trigger) await this.index.addSchedule(task);
      try {
        await this.files.tasks.create(task.workspaceId, task.ownerId, task.id, task, access);
      } catch (error) {
        if (task.trigger) await unscheduleUnwritten(this.index, this.files, this.options.log, task);
        throw error;
      }
      (await this.loaded.peek(task.workspaceId))?.setTask(task);
      return task;
    });
  }

  /**
   * Rereads the task, applies `change`, writes it whole; undefined when it is gone. `committed`
   * is told the written task before the next update of it starts, so a caller's own copy (the
   * task's job, tasks.ts) follows the writes in their order.
   */
  async update(
    task: Task,
    change: (current: Task) => Task,
    access: AccessCheck,
    committed?: (next: Task) => void,
  ): Promise<Task | undefined> {
    // The whole update holds the task's lock, not only its write: an update that took the
    // trigger away and removed the schedule entry after a later update put both back left a
    // triggered task with no entry, armed by no restart (store.test.ts "two updates at once").
    return this.taskLocks.run(taskKey(task), async () => {
      let hadTrigger = false;
      let indexed = false;
      const apply = async (current: Task) => {
        const changed = change(current);
        hadTrigger = current.trigger !== undefined;
        if (changed.trigger && !hadTrigger) {
          await this.index.addSchedule(changed);
          indexed = true;
        }
        return changed;
      };
      let next: Task | undefined;
      try {
        const place = { workspaceId: task.workspaceId, ownerId: task.ownerId, id: task.id };
        next = await this.files.updateTask(place, apply, access);
      } catch (error) {
        if (indexed) await unscheduleUnwritten(this.index, this.files, this.options.log, task);
        throw error;
      }
      if (!next) return undefined;
      (await this.loaded.peek(task.workspaceId))?.setTask(next);
      if (hadTrigger && !next.trigger) await this.index.removeSchedule(next);
      committed?.(next);
      return next;
    });
  }

  /**
   * Calls `start` with the task as it is now, under the task's lock, and answers what it did;
   * undefined, starting nothing, when the task is gone. A delete waits for a start in progress, so
   * it finds the run the start recorded and stops it; a start after a delete finds no task
   * (tasks.test.ts "a run started while its task is deleted").
   */
  async whileExists<R>(
    task: Pick<Task, "workspaceId" | "id">,
    start: (current: Task) => Promise<R>,
  ): Promise<R | undefined> {
    return this.taskLocks.run(taskKey(task), async () => {
      const current = await this.taskIn(task.workspaceId, task.id);
      return current && start(current);
    });
  }

  /**
   * Removes the task, then its runs with their result files; false, removing nothing, when the task
   * is gone already. `check` is shown the task as it is under its lock, reread, and throws to
   * refuse: who may delete it is decided on the task as it is removed, not on the copy the caller
   * read before waiting for the lock (tasks.test.ts "an admin's delete"). The task is gone first,
   * under its lock, so no run of it starts after; then `stopRuns` is given every run it has (the
   * ones in flight are to be ended before it returns), and each is removed. A crash part way leaves
   * runs whose task is gone: the next read of the workspace's runs finds them and forgets them
   * (`orphaned`).
   */
  async delete(
    task: Task,
    check: (current: Task) => void,
    access: AccessCheck,
    stopRuns: (runIds: readonly string[]) => Promise<void>,
  ): Promise<boolean> {
    // The runs are read while the task is there: a first read after would take them for orphans.
    await this.runIds(task);
    const removed = await this.taskLocks.run(taskKey(task), async () => {
      const current = await this.taskIn(task.workspaceId, task.id);
      if (!current) return false;
      check(current);
      await this.files.tasks.delete(task.workspaceId, task.ownerId, task.id, access);
      (await this.loaded.peek(task.workspaceId))?.tasks.delete(task.id);
      return true;
    });
    if (!removed) return false;
    const runIds = await this.runIds(task);
    await stopRuns(runIds);
    (await this.loadedRuns(task.workspaceId))?.deleteTask(task.id);
    await this.index.removeSchedule(task);
    for (const runId of runIds) await forgetRunRecord(this.files, this.options.results, task, runId);
    return true;
  }

  /**
   * Records a run's start, the commit point of starting it, and answers it as recorded. Its caller
   * holds the task's lock (`whileExists`), so its starts, updates and delete take turns. Its
   * `sequence` is one past the task's `lastSequence`, written to the task's record first
   * (run-sequence.ts), its loaded copy kept current.
   * `access` is asked just before the run's record is created (see `create`). A refusal leaves the
   * workspace marked as having runs started here (boot-index.ts), the workspace's mark and not
   * the run's, cleared as every mark is; and the sequence taken, a gap.
   */
  async createRun(run: Omit<Run, "sequence">, access: AccessCheck): Promise<Run> {
    const { workspaceId, ownerId, taskId } = run;
    await this.index.markRunning(workspaceId);
    const known = await this.taskIn(workspaceId, taskId);
    const loaded = await this.loaded.peek(workspaceId);
    const counted = { known, inMemory: loaded?.highestRunSequence(taskId) ?? 0 };
    const taken = await takeSequence(this.files, { workspaceId, ownerId, id: taskId }, access, counted, () =>
      this.withRuns(workspaceId, async (_loaded, runs) => runs.lastSequenceOf(taskId)),
    );
    loaded?.setTask(taken.task);
    const recorded: Run = { ...run, sequence: taken.sequence };
    await this.files.runs.create(workspaceId, ownerId, run.id, recorded, access);
    // Not awaited: a start does not wait for a read of the runs under way (a run's end reads them
    // for its prune). A call after this one that needs the runs awaits the same read, and its
    // turn comes after this (a promise's callbacks run in the order they were added).
    loaded?.runs?.then(
      (runs) => runs.addRun(taskId, run.id, recorded),
      () => undefined,
    );
    return recorded;
  }

  async updateRun(run: Pick<Run, "id" | "workspaceId" | "ownerId">, change: (current: Run) => Run) {
    return this.files.runs.update(run.workspaceId, run.ownerId, run.id, change);
  }

  /** A run of this workspace by id, read from disk; undefined when there is none. */
  async run(workspaceId: string, runId: string): Promise<Run | undefined> {
    const task = await this.withRuns(workspaceId, async (loaded, runs) => {
      const taskId = runs.taskOf(runId);
      return taskId === undefined ? undefined : loaded.tasks.get(taskId);
    });
    return task && this.files.run(workspaceId, task.ownerId, runId);
  }

  /** The ids of a task's runs, newest first. */
  runIds(task: Pick<Task, "workspaceId" | "id">): Promise<string[]> {
    return this.withRuns(task.workspaceId, async (_loaded, runs) => runs.runIds(task.id));
  }

  /**
   * Removes these of the task's runs (its finished runs past what it keeps) with their result
   * files. Each is unlisted first, so no reader is answered a run whose file is being deleted; a
   * crash before its record goes leaves a run the next prune takes again.
   */
  async forgetRuns(task: Pick<Task, "workspaceId" | "ownerId" | "id">, ids: readonly string[]) {
    (await this.loadedRuns(task.workspaceId))?.forgetRuns(task.id, ids);
    for (const runId of ids) await forgetRunRecord(this.files, this.options.results, task, runId);
  }

  /**
   * Heals the task's record restored below its runs (ADR 0171's amendment) as `ended` ends, under
   * its lock (run-sequence.ts raiseSequence): the prune has read the runs, counted in memory.
   */
  async raiseSequence(task: RecordRef, ended: Pick<Run, "id" | "sequence">): Promise<void> {
    // Read before the lock, as a start does: reading the runs may be long, and its hooks write.
    await this.withRuns(task.workspaceId, async () => undefined);
    await this.taskLocks.run(taskKey(task), async () => {
      const runs = await this.loadedRuns(task.workspaceId);
      if (!runs || !(await this.taskIn(task.workspaceId, task.id))) return;
      const healed = await raiseSequence(this.files, task, ended, runs.lastSequenceOf(task.id));
      if (healed.task) (await this.loaded.peek(task.workspaceId))?.setTask(healed.task);
      if (healed.renumbered !== undefined) runs.renumber(task.id, ended.id, healed.renumbered);
    });
  }

  /** Forgets runs whose task is gone (told through `orphaned`), their result files first (run-removal.ts). */
  forgetOrphans(runs: readonly Run[]): Promise<void> {
    return forgetOrphanRuns(this.files, this.options.results, runs);
  }

  /** Runs `work` with the workspace's idempotency keys, the workspace held loaded meanwhile. */
  withKeys<R>(workspaceId: string, work: (keys: IdempotencyKeys) => Promise<R>): Promise<R> {
    return this.withRuns(workspaceId, (_loaded, runs) => work(runs.keys));
  }

  /** Workspaces whose tasks are in memory now. */
  get loadedCount(): number {
    return this.loaded.size;
  }

  /** Drops the workspaces unused for the idle time (also done on a timer). */
  sweepIdle(now?: number): Promise<void> {
    return this.loaded.sweep(now);
  }

  /**
   * After a graceful stop recorded its runs: no workspace is left marked but those it could not
   * record a run's end in (`unrecorded`), whose runs the next boot records as a crash's; nothing held.
   */
  async close(unrecorded: ReadonlySet<string> = new Set()): Promise<void> {
    await this.index.clearAllRunning(unrecorded);
    await this.loaded.close();
  }

  /** R1 in the task files' folders (task-files.ts). */
  recoverWorkspace(workspaceId: string, present: ReadonlySet<string>, pass: RecoveryPass) {
    return this.files.recoverWorkspace(workspaceId, present, pass);
  }

  /** One workspace's task definitions, read from disk. */
  private async load(workspaceId: string): Promise<LoadedWorkspace> {
    const loaded = new LoadedWorkspace();
    const { tasks, unreadable } = await this.files.allTasks(workspaceId);
    for (const task of tasks) loaded.setTask(task);
    loaded.unreadable.push(...unreadable);
    await this.hooks.loaded([...loaded.tasks.values()]);
    return loaded;
  }

  /**
   * Runs `work` with the workspace's runs, reading them first if no call has needed them yet, and
   * reading again first the records the read could not (TaskFiles.runHeader): a fault that passes
   * (EIO, EMFILE) leaves a run out of its task's runs until the next call, not until an eviction.
   */
  private withRuns<R>(
    workspaceId: string,
    work: (loaded: LoadedWorkspace, runs: LoadedRuns) => Promise<R>,
  ): Promise<R> {
    return this.loaded.use(workspaceId, async (loaded) => {
      if (!loaded.runs) {
        const { clock, idempotencyWindowMs } = this.options;
        const keys = new IdempotencyKeys(clock, idempotencyWindowMs);
        const reading = readRuns(this.files, workspaceId, loaded, keys, this.hooks);
        loaded.runs = reading;
        // A read that failed is tried again by the next call, not remembered.
        reading.catch(() => {
          if (loaded.runs === reading) loaded.runs = undefined;
        });
      }
      const runs = await loaded.runs;
      loaded.runsRead = runs;
      if (runs.unreadable.length > 0 || runs.readingAgain)
        await readAgain(this.files, loaded, runs, this.hooks);
      return work(loaded, runs);
    });
  }

  /** The runs of a loaded workspace's tasks, if a call has needed them; else the disk has them. */
  private async loadedRuns(workspaceId: string): Promise<LoadedRuns | undefined> {
    return (await this.loaded.peek(workspaceId))?.loadedRuns();
  }
}

function taskKey(task: Pick<Task, "workspaceId" | "id">): string {
  return `${task.workspaceId}/${task.id}`;
}
