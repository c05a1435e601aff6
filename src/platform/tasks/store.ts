import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { isPrincipalId } from "../../ids.ts";
import { OwnedRecords, sweepOwnerPartition } from "../../storage/owned-records.ts";
import type { PartitionPaths } from "../../storage/paths.ts";
import { type LeftoverRules, type RecoveryPass, sweepTempEntries } from "../../storage/recovery.ts";
import type { Run, Task } from "./model.ts";

const RUNS = "runs";

/** Where a run is found without reading it: its task, workspace and owner. */
interface RunRef {
  id: string;
  taskId: string;
  workspaceId: string;
  ownerId: string;
  startedAt: string;
}

/**
 * Tasks and their runs, under the owner's partition: `<ws>/tasks/<owner>/tsk_….json` and
 * `<ws>/tasks/<owner>/runs/run_….json`, each written whole (OwnedRecords). An in-memory index of
 * every task and of each task's runs (newest last) is loaded at boot and kept by these writers,
 * so a list never walks the disk (CRAFT: the filesystem is not a database). A run's record is
 * read from disk when asked for: results can be large.
 */
export class TaskStore implements LeftoverRules {
  private readonly tasks: OwnedRecords<Task>;
  private readonly runs: OwnedRecords<Run>;
  private readonly byWorkspace = new Map<string, Map<string, Task>>();
  private readonly runsOfTask = new Map<string, RunRef[]>();
  private readonly runIndex = new Map<string, RunRef>();

  constructor(private readonly storage: PartitionPaths) {
    this.tasks = new OwnedRecords(storage.ownerDir);
    this.runs = new OwnedRecords((ws, owner) => join(storage.ownerDir(ws, owner), RUNS));
  }

  /**
   * Reads every workspace's tasks and runs into the index, showing `visit` each run of a task
   * that exists; returns the runs left `running`.
   */
  async load(workspaceIds: Iterable<string>, visit: (run: Run) => void): Promise<Run[]> {
    const unfinished: Run[] = [];
    for (const workspaceId of workspaceIds) {
      for (const ownerId of await this.owners(workspaceId)) {
        for (const task of await this.tasks.list(workspaceId, ownerId)) this.remember(task);
        const runs = await this.runs.list(workspaceId, ownerId);
        runs.sort((a, b) => a.startedAt.localeCompare(b.startedAt));
        for (const run of runs) {
          if (!this.taskIn(workspaceId, run.taskId)) continue;
          this.rememberRun(run);
          visit(run);
          if (run.execution.status === "running") unfinished.push(run);
        }
      }
    }
    return unfinished;
  }

  /** Every task of a workspace, whoever owns it; the caller filters by who may see them. */
  all(workspaceId: string): Task[] {
    return [...(this.byWorkspace.get(workspaceId)?.values() ?? [])];
  }

  /** Every task of every workspace with a trigger. */
  triggered(): Task[] {
    return [...this.byWorkspace.values()].flatMap((tasks) => [...tasks.values()].filter((t) => t.trigger));
  }

  taskIn(workspaceId: string, taskId: string): Task | undefined {
    return this.byWorkspace.get(workspaceId)?.get(taskId);
  }

  async create(task: Task): Promise<Task> {
    await this.tasks.create(task.workspaceId, task.ownerId, task.id, task);
    this.remember(task);
    return task;
  }

  /** Rereads the task, applies `change`, writes it whole; undefined when it is gone. */
  async update(task: Task, change: (current: Task) => Task): Promise<Task | undefined> {
    const next = await this.tasks.update(task.workspaceId, task.ownerId, task.id, change);
    if (next) this.remember(next);
    return next;
  }

  /** Removes the task and its runs' records. */
  async delete(task: Task): Promise<void> {
    await this.tasks.delete(task.workspaceId, task.ownerId, task.id);
    this.byWorkspace.get(task.workspaceId)?.delete(task.id);
    for (const ref of this.runsOfTask.get(task.id) ?? []) {
      await this.runs.delete(ref.workspaceId, ref.ownerId, ref.id);
      this.runIndex.delete(ref.id);
    }
    this.runsOfTask.delete(task.id);
  }

  async createRun(run: Run): Promise<Run> {
    await this.runs.create(run.workspaceId, run.ownerId, run.id, run);
    this.rememberRun(run);
    return run;
  }

  async updateRun(run: Pick<Run, "id" | "workspaceId" | "ownerId">, change: (current: Run) => Run) {
    return this.runs.update(run.workspaceId, run.ownerId, run.id, change);
  }

  /** A run of this workspace by id, read from disk; undefined when there is none. */
  async run(workspaceId: string, runId: string): Promise<Run | undefined> {
    const ref = this.runIndex.get(runId);
    if (!ref || ref.workspaceId !== workspaceId) return undefined;
    return this.runs.get(ref.workspaceId, ref.ownerId, ref.id);
  }

  /** The ids of a task's runs, newest first. */
  runIds(taskId: string): string[] {
    return (this.runsOfTask.get(taskId) ?? []).map((ref) => ref.id).reverse();
  }

  /** Removes the oldest of `ids` (a task's finished runs past what it keeps). */
  async forgetRuns(taskId: string, ids: readonly string[]): Promise<void> {
    const doomed = new Set(ids);
    for (const ref of (this.runsOfTask.get(taskId) ?? []).filter((r) => doomed.has(r.id))) {
      await this.runs.delete(ref.workspaceId, ref.ownerId, ref.id);
      this.runIndex.delete(ref.id);
    }
    this.runsOfTask.set(
      taskId,
      (this.runsOfTask.get(taskId) ?? []).filter((ref) => !doomed.has(ref.id)),
    );
  }

  /** R1: writers' temp files in the partition, the owner folders and their runs folders. */
  async recoverWorkspace(workspaceId: string, present: ReadonlySet<string>, pass: RecoveryPass) {
    if (!present.has(this.storage.partition)) return;
    const owners = await sweepOwnerPartition(this.storage.dir(workspaceId), pass);
    for (const { ownerId } of owners) {
      if (isPrincipalId(ownerId)) {
        await sweepTempEntries(join(this.storage.ownerDir(workspaceId, ownerId), RUNS), pass);
      }
    }
  }

  private async owners(workspaceId: string): Promise<string[]> {
    try {
      return (await readdir(this.storage.dir(workspaceId))).filter(isPrincipalId);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw error;
    }
  }

  private remember(task: Task): void {
    let tasks = this.byWorkspace.get(task.workspaceId);
    if (!tasks) {
      tasks = new Map();
      this.byWorkspace.set(task.workspaceId, tasks);
    }
    tasks.set(task.id, task);
  }

  private rememberRun(run: Run): void {
    const ref: RunRef = {
      id: run.id,
      taskId: run.taskId,
      workspaceId: run.workspaceId,
      ownerId: run.ownerId,
      startedAt: run.startedAt,
    };
    this.runIndex.set(run.id, ref);
    const list = this.runsOfTask.get(run.taskId) ?? [];
    list.push(ref);
    this.runsOfTask.set(run.taskId, list);
  }
}
