import { join } from "node:path";
import { isPrincipalId, isRecordId } from "../../ids.ts";
import type { Logger } from "../../log.ts";
import { mapBounded } from "../../storage/bounded.ts";
import { namesIn } from "../../storage/folders.ts";
import { OwnedRecords } from "../../storage/owned-json-records.ts";
import { sweepOwnerPartition } from "../../storage/owned-records.ts";
import type { PartitionPaths } from "../../storage/paths.ts";
import { type LeftoverRules, type RecoveryPass, sweepTempEntries } from "../../storage/recovery.ts";
import {
  DAMAGED,
  DamagedRecords,
  type RecordRef,
  runProblem,
  TaskRecordUnreadable,
  taskProblem,
} from "./damaged-records.ts";
import { headerOf, type RunHeader, type RunHeaders, UNREADABLE, type UnreadableTask } from "./loaded.ts";
import type { Run, Task } from "./model.ts";

const RUNS = "runs";
/** Task records read at once when a workspace is loaded. */
const TASKS_READ_AT_ONCE = 16;
/** Run records read at once when a workspace's runs are first needed: each may be large. */
const RUNS_READ_AT_ONCE = 8;

/**
 * Where tasks and their runs lie on disk, under the owner's partition:
 * `<ws>/tasks/<owner>/tsk_….json` and `<ws>/tasks/<owner>/runs/run_….json`, each written whole
 * (OwnedRecords); and the walks over a workspace's folders: its tasks and its runs when it is
 * loaded, a task as boot reads it, and the temp files recovery sweeps. What is kept in memory,
 * and in what order the writes go, is the store's (store.ts).
 */
export class TaskFiles implements LeftoverRules {
  readonly tasks: OwnedRecords<Task>;
  readonly runs: OwnedRecords<Run>;
  private readonly damagedTasks: DamagedRecords<Task>;
  private readonly damagedRuns: DamagedRecords<Run>;

  constructor(
    private readonly storage: PartitionPaths,
    log: Logger,
  ) {
    this.tasks = new OwnedRecords(storage.ownerDir);
    this.runs = new OwnedRecords((ws, owner) => join(storage.ownerDir(ws, owner), RUNS));
    this.damagedTasks = new DamagedRecords(
      "task",
      log,
      taskProblem,
      (place) => this.taskPath(place.workspaceId, place.ownerId, place.id),
      "when its workspace is next loaded (after it idles, or at a restart)",
    );
    this.damagedRuns = new DamagedRecords(
      "task run",
      log,
      runProblem,
      (place) => join(storage.ownerDir(place.workspaceId, place.ownerId), RUNS, `${place.id}.json`),
      "at each call that needs its workspace's runs",
    );
  }

  /**
   * Every task of the workspace, owner by owner. One whose record is damaged (damaged-records.ts)
   * or cannot be read (`task`) is left out (logged) and named in `unreadable` with its owner, the
   * folder it is in: it is still stored, so the workspace's bounds count it (ADR 0079, 0143).
   */
  async allTasks(workspaceId: string): Promise<{ tasks: Task[]; unreadable: UnreadableTask[] }> {
    const tasks: Task[] = [];
    const unreadable: UnreadableTask[] = [];
    for (const ownerId of await this.owners(workspaceId)) {
      const ids = await this.tasks.ids(workspaceId, ownerId);
      const read = await mapBounded(ids, TASKS_READ_AT_ONCE, (id) => this.task({ workspaceId, ownerId, id }));
      read.forEach((task, at) => {
        if (task === DAMAGED) unreadable.push({ id: ids[at] as string, ownerId });
        else if (task) tasks.push(task);
      });
    }
    return { tasks, unreadable };
  }

  /**
   * What reading every run record of the workspace keeps of each (loaded.ts `RunHeader`), the
   * whole record of those `keepWhole` picks. Every owner's, not only those with a task: a crash
   * may have left runs of a deleted last task. A damaged record is left out (logged): which task
   * it is of cannot be trusted, so it stays on disk, listed by no task. One that cannot be read
   * (`runHeader`) is left out too, and named in `unreadable`, to be read again.
   */
  async runHeaders(workspaceId: string, keepWhole: (run: Run) => boolean): Promise<RunHeaders> {
    const found: RunHeader[] = [];
    const unreadable: RecordRef[] = [];
    for (const ownerId of await this.owners(workspaceId)) {
      const places = (await this.runs.ids(workspaceId, ownerId)).map((id) => ({ workspaceId, ownerId, id }));
      const headers = await mapBounded(places, RUNS_READ_AT_ONCE, (place) =>
        this.runHeader(place, keepWhole),
      );
      headers.forEach((header, at) => {
        if (header === UNREADABLE) unreadable.push(places[at] as RecordRef);
        else if (header) found.push(header);
      });
    }
    return { found, unreadable };
  }

  /**
   * One run record's header; undefined when there is none or it is damaged (logged); UNREADABLE
   * when it is there and reading it failed (an I/O fault, its permissions, a folder under its
   * name; logged). Such a fault may be passing (EIO, EMFILE), and one record is not to fail the
   * read of every run of its workspace, which every start of every task waits for (ADR 0056).
   */
  async runHeader(
    place: RecordRef,
    keepWhole: (run: Run) => boolean,
  ): Promise<RunHeader | undefined | typeof UNREADABLE> {
    try {
      const run = await this.run(place.workspaceId, place.ownerId, place.id);
      return run && headerOf(run, keepWhole(run));
    } catch (error) {
      this.damagedRuns.unreadable(place, error);
      return UNREADABLE;
    }
  }

  /** A run's record; undefined when there is none, or it is damaged (logged). */
  async run(workspaceId: string, ownerId: string, id: string): Promise<Run | undefined> {
    const run = await this.damagedRuns.read(this.runs.get(workspaceId, ownerId, id), {
      workspaceId,
      ownerId,
      id,
    });
    return run === DAMAGED ? undefined : run;
  }

  /**
   * Whether the task's record is there, read or not: a damaged one, or one that cannot be read,
   * is there (logged), so its runs are kept for when it is mended.
   */
  async hasTask(workspaceId: string, ownerId: string, id: string): Promise<boolean> {
    return (await this.task({ workspaceId, ownerId, id })) !== undefined;
  }

  /**
   * Rereads the task's record, applies `change` and writes it whole (OwnedRecords.update);
   * undefined when it is gone. A record that is damaged or cannot be read is not written over:
   * `change` would be given no task, or another's (a file copied over it), and its write would
   * replace what a restore could bring back. TaskRecordUnreadable is thrown, logged, nothing written.
   */
  async updateTask(
    place: RecordRef,
    change: (current: Task) => Promise<Task>,
    beforeCommit?: () => void,
  ): Promise<Task | undefined> {
    let read = false;
    const checked = async (current: Task) => {
      read = true;
      if ((await this.damagedTasks.read(Promise.resolve(current), place)) === DAMAGED)
        throw new TaskRecordUnreadable(place.id);
      return change(current);
    };
    const { workspaceId, ownerId, id } = place;
    try {
      return await this.tasks.update(workspaceId, ownerId, id, checked, beforeCommit);
    } catch (error) {
      // Thrown before `change` was given the record, it is the record's read that failed.
      if (read) throw error;
      this.damagedTasks.readFailed(place, error);
      throw new TaskRecordUnreadable(id);
    }
  }

  /**
   * A task as boot reads it (a schedule entry's, or one the index's first build walks): through
   * the same check as a load's, so a record that is damaged, or whose ids are not its path's (a
   * file copied or moved by hand), is DAMAGED, logged once, and never armed: boot took its ids for
   * the task's, and armed and caught up the task its text named. Boot goes on (ADR 0147).
   */
  async taskAtBoot(
    workspaceId: string,
    ownerId: string,
    id: string,
  ): Promise<Task | undefined | typeof DAMAGED> {
    if (!isRecordId(id)) return undefined;
    return this.task({ workspaceId, ownerId, id });
  }

  /**
   * A task's record; DAMAGED when it is damaged or cannot be read (an I/O fault, its permissions,
   * a folder under its name), logged once: one record's fault is not to fail the load of every
   * task of its workspace, nor boot (ADR 0143's amendment of 2026-12-07).
   */
  private async task(place: RecordRef): Promise<Task | undefined | typeof DAMAGED> {
    const { workspaceId, ownerId, id } = place;
    try {
      return await this.damagedTasks.read(this.tasks.get(workspaceId, ownerId, id), place);
    } catch (error) {
      this.damagedTasks.unreadable(place, error);
      return DAMAGED;
    }
  }

  /** The owners with a folder in the workspace's partition. */
  async owners(workspaceId: string): Promise<string[]> {
    return (await namesIn(this.storage.dir(workspaceId))).filter(isPrincipalId);
  }

  /** Where a task's record is: the workspace and owner checked by the paths module, the id by the caller. */
  private taskPath(workspaceId: string, ownerId: string, id: string): string {
    return join(this.storage.ownerDir(workspaceId, ownerId), `${id}.json`);
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
}
