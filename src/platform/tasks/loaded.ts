import type { RecordRef } from "./damaged-records.ts";
import type { IdempotencyKeys } from "./idempotency.ts";
import type { Run, Task } from "./model.ts";

/**
 * A task whose record is stored and damaged (damaged-records.ts), named by its place: its id is
 * its file's name and its owner the folder it is in, known without reading it.
 */
export type UnreadableTask = Pick<Task, "id" | "ownerId">;

/** A run found `running` when its workspace was loaded, with its task. */
export interface Unfinished {
  run: Run;
  task: Task;
}

/** What a load shows the rest of the app before it answers anyone. */
export interface LoadHooks {
  /** The workspace's tasks, just read: a triggered one with no job is armed (one copied in by hand). */
  loaded(tasks: readonly Task[]): Promise<void>;
  /**
   * The runs found `running` when the workspace's runs were read: those not in flight here are a
   * crash's, recorded before the read answers, so no reader sees a run left running.
   */
  unfinished(found: readonly Unfinished[]): Promise<void>;
  /**
   * Run records found whose task is gone (a crash between a task's removal and its runs'): they
   * are left out of what the read answers and handed here, to be forgotten
   * (TaskStore.forgetOrphans) once tools may be called. Told, not awaited: their files are
   * deleted in the background.
   */
  orphaned(runs: readonly Run[]): void;
}

/**
 * One workspace's tasks while it is loaded (ADR 0056). Its task definitions are read on first
 * use; the order of its runs only when a call needs them (a run started, listed or read), since
 * that reads every kept run's record. A run's record stays on disk, read when asked for: results
 * can be large. Kept by the store's writers until dropped when idle; a writer's change is applied
 * whether or not the load already saw it, so each change is idempotent here.
 */
export class LoadedWorkspace {
  readonly tasks = new Map<string, Task>();
  /**
   * The tasks left out for a damaged record: shown to no one, but stored, so counted against the
   * workspace's bounds (ADR 0079, 0143). As the load found them: a file restored or removed on
   * disk is seen when the workspace is next loaded.
   */
  readonly unreadable: UnreadableTask[] = [];
  /** The runs, once a call needed them: a promise while they are being read. */
  runs?: Promise<LoadedRuns>;
  /** The same, once read: what a start counts without waiting for a read (`highestRunSequence`). */
  runsRead?: LoadedRuns;

  setTask(task: Task): void {
    this.tasks.set(task.id, task);
  }

  /**
   * The highest sequence among the task's runs if they are in memory, 0 when they are not read:
   * a start counts them only when that costs no read (ADR 0171's amendment).
   */
  highestRunSequence(taskId: string): number {
    return this.runsRead?.lastSequenceOf(taskId) ?? 0;
  }

  /** The runs, if they are loaded or loading; a change to runs not loaded is left to the disk. */
  async loadedRuns(): Promise<LoadedRuns | undefined> {
    return this.runs?.catch(() => undefined);
  }
}

/**
 * A loaded workspace's runs: each task's run ids in the order they started (oldest first), which
 * task a run is of, the highest sequence among each task's runs known here, and the idempotency
 * keys still in their window.
 */
export class LoadedRuns {
  private readonly runsOf = new Map<string, string[]>();
  private readonly taskOfRun = new Map<string, string>();
  private readonly lastSequence = new Map<string, number>();
  /** Where each run stands among its task's runs (`startOrder`). */
  private readonly orderOf = new Map<string, RunOrder>();
  /**
   * Run records the read met and could not read (TaskFiles.runHeader): left out for now, and
   * read again by each later call (TaskStore.withRuns) until they read, are gone, or are damaged.
   */
  readonly unreadable: RecordRef[] = [];
  /** Those being read again now (run-reads.ts readAgain). */
  readingAgain?: Promise<void>;

  constructor(readonly keys: IdempotencyKeys) {}

  /** Forgets the task's runs; returns their ids. */
  deleteTask(taskId: string): string[] {
    const runIds = this.runsOf.get(taskId) ?? [];
    for (const runId of runIds) {
      this.taskOfRun.delete(runId);
      this.orderOf.delete(runId);
    }
    this.runsOf.delete(taskId);
    this.lastSequence.delete(taskId);
    this.keys.forget(runIds);
    return runIds;
  }

  /** The highest sequence among the task's runs read or added here; 0 when it has none. */
  lastSequenceOf(taskId: string): number {
    return this.lastSequence.get(taskId) ?? 0;
  }

  /**
   * Adds a run in its place among the task's runs, unless it is known: last for a run just
   * started, since a task's starts take its lock (ADR 0087) and so are added in the order their
   * sequences were taken; further back for one read late, after a fault kept it unread.
   */
  addRun(taskId: string, runId: string, order: RunOrder): void {
    const { sequence } = order;
    if (sequence !== undefined && sequence > (this.lastSequence.get(taskId) ?? 0)) {
      this.lastSequence.set(taskId, sequence);
    }
    if (this.taskOfRun.has(runId)) return;
    this.taskOfRun.set(runId, taskId);
    this.orderOf.set(runId, { sequence, startedAt: order.startedAt });
    const list = this.runsOf.get(taskId) ?? [];
    let at = list.length;
    while (at > 0 && startOrder(this.orderOf.get(list[at - 1] as string) ?? order, order) > 0) at--;
    list.splice(at, 0, runId);
    this.runsOf.set(taskId, list);
  }

  /**
   * Moves a run renumbered past its task's others (run-sequence.ts raiseSequence) to their end,
   * the newest it is; its idempotency key stays.
   */
  renumber(taskId: string, runId: string, sequence: number): void {
    const order = this.orderOf.get(runId);
    const list = this.runsOf.get(taskId);
    if (!order || !list || this.taskOfRun.get(runId) !== taskId) return;
    list.splice(list.indexOf(runId), 1);
    this.taskOfRun.delete(runId);
    this.orderOf.delete(runId);
    this.addRun(taskId, runId, { ...order, sequence });
  }

  forgetRuns(taskId: string, runIds: readonly string[]): void {
    const doomed = new Set(runIds);
    for (const runId of doomed) {
      this.taskOfRun.delete(runId);
      this.orderOf.delete(runId);
    }
    // A removed run takes its key with it: the key is free, and nothing of the run is kept.
    this.keys.forget(doomed);
    const kept = (this.runsOf.get(taskId) ?? []).filter((runId) => !doomed.has(runId));
    if (kept.length > 0) this.runsOf.set(taskId, kept);
    else this.runsOf.delete(taskId);
  }

  /** The id of the task a run is of, when the run is known. */
  taskOf(runId: string): string | undefined {
    return this.taskOfRun.get(runId);
  }

  /** The ids of a task's runs, newest first. */
  runIds(taskId: string): string[] {
    return [...(this.runsOf.get(taskId) ?? [])].reverse();
  }
}

/**
 * What reading a workspace's runs keeps of one: enough to index it and restore its idempotency
 * key. The whole record only when a hook needs it (a run left `running`, or one whose task is
 * gone): results can be large, and a workspace's runs add up to gigabytes.
 */
export type RunHeader = Pick<
  Run,
  "id" | "taskId" | "startedBy" | "startedAt" | "sequence" | "idempotency"
> & {
  whole?: Run;
};

/** What a read of a workspace's runs found: their headers, and the records it could not read. */
export interface RunHeaders {
  found: RunHeader[];
  unreadable: RecordRef[];
}

/** What TaskFiles.runHeader answers for a record that is there and could not be read. */
export const UNREADABLE = Symbol("unreadable record");

/** What orders a task's runs (`startOrder`). */
export type RunOrder = Pick<Run, "sequence" | "startedAt">;

/**
 * The order runs started in: by sequence, never by startedAt alone. After a wall clock stepped
 * back, the run started later has the earlier startedAt, and ordered so it was taken for the
 * oldest, pruned past runsKeptPerTask while an older run was kept
 * (test/integration/tasks-run-order-after-clock-step.test.ts). A run recorded before sequences
 * (none) is older than any that has one; among those, startedAt is all there is.
 */
export function startOrder(a: RunOrder, b: RunOrder): number {
  return (a.sequence ?? 0) - (b.sequence ?? 0) || a.startedAt.localeCompare(b.startedAt);
}

export function headerOf(run: Run, keepWhole: boolean): RunHeader {
  const { id, taskId, startedBy, startedAt, sequence, idempotency } = run;
  return {
    id,
    taskId,
    startedBy,
    startedAt,
    ...(isSequence(sequence) && { sequence }),
    ...(idempotency && { idempotency }),
    ...(keepWhole && { whole: run }),
  };
}

/**
 * The headers a read of a workspace's runs found, put in `runs` in the order they started, with
 * what the load hooks are told: each run left `running` with its task, and each run whose task
 * is gone (a crash between a task's delete and its runs').
 */
export function placeRuns(
  found: RunHeader[],
  tasks: ReadonlyMap<string, Task>,
  runs: LoadedRuns,
): { unfinished: Unfinished[]; orphaned: Run[] } {
  found.sort(startOrder);
  const unfinished: Unfinished[] = [];
  const orphaned: Run[] = [];
  for (const header of found) {
    const task = tasks.get(header.taskId);
    if (!task) {
      if (header.whole) orphaned.push(header.whole);
      continue;
    }
    runs.addRun(task.id, header.id, header);
    runs.keys.restore(header);
    if (header.whole?.execution.status === "running") unfinished.push({ run: header.whole, task });
  }
  return { unfinished, orphaned };
}

/**
 * Whether a stored sequence can order runs: a whole number from 1 up. One edited by hand into
 * anything else is read as absent, as on a run recorded before sequences, rather than leaving
 * the run out of its task's runs.
 */
function isSequence(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) > 0;
}
