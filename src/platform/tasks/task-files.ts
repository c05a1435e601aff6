import { join } from "node:path";
import { isPrincipalId, isRecordId } from "../../ids.ts";
import type { Logger } from "../../log.ts";
import { type CorruptJson, readJsonAtBoot } from "../../storage/atomic.ts";
import { mapBounded } from "../../storage/bounded.ts";
import { namesIn } from "../../storage/folders.ts";
import { OwnedRecords, sweepOwnerPartition } from "../../storage/owned-records.ts";
import type { PartitionPaths } from "../../storage/paths.ts";
import { type LeftoverRules, type RecoveryPass, sweepTempEntries } from "../../storage/recovery.ts";
import { DAMAGED, DamagedRecords } from "./damaged-records.ts";
import { headerOf, type RunHeader } from "./loaded.ts";
import type { Run, Task } from "./model.ts";

const RUNS = "runs";
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
  private readonly damagedTasks: DamagedRecords;
  private readonly damagedRuns: DamagedRecords;

  constructor(
    private readonly storage: PartitionPaths,
    log: Logger,
  ) {
    this.tasks = new OwnedRecords(storage.ownerDir);
    this.runs = new OwnedRecords((ws, owner) => join(storage.ownerDir(ws, owner), RUNS));
    this.damagedTasks = new DamagedRecords("task", log);
    this.damagedRuns = new DamagedRecords("task run", log);
  }

  /** Every task of the workspace, owner by owner; one whose record does not parse is left out (logged). */
  async allTasks(workspaceId: string): Promise<Task[]> {
    const tasks: Task[] = [];
    for (const ownerId of await this.owners(workspaceId)) {
      const damaged = (error: CorruptJson, id: string) =>
        this.damagedTasks.report(error, { workspaceId, ownerId, id });
      for (const task of await this.tasks.list(workspaceId, ownerId, damaged)) tasks.push(task);
    }
    return tasks;
  }

  /**
   * What reading every run record of the workspace keeps of each (loaded.ts `RunHeader`), the
   * whole record of those `keepWhole` picks. Every owner's, not only those with a task: a crash
   * may have left runs of a deleted last task. A record that does not parse is left out (logged):
   * which task it is of cannot be read, so it stays on disk, listed by no task.
   */
  async runHeaders(workspaceId: string, keepWhole: (run: Run) => boolean): Promise<RunHeader[]> {
    const found: RunHeader[] = [];
    for (const ownerId of await this.owners(workspaceId)) {
      const ids = await this.runs.ids(workspaceId, ownerId);
      const headers = await mapBounded(ids, RUNS_READ_AT_ONCE, async (id) => {
        const run = await this.run(workspaceId, ownerId, id);
        return run && headerOf(run, keepWhole(run));
      });
      for (const header of headers) if (header) found.push(header);
    }
    return found;
  }

  /** A run's record; undefined when there is none, or it does not parse (logged). */
  async run(workspaceId: string, ownerId: string, id: string): Promise<Run | undefined> {
    const run = await this.damagedRuns.read(this.runs.get(workspaceId, ownerId, id), {
      workspaceId,
      ownerId,
      id,
    });
    return run === DAMAGED ? undefined : run;
  }

  /** Whether the task's record is there, read or not: one that does not parse is there (logged). */
  async hasTask(workspaceId: string, ownerId: string, id: string): Promise<boolean> {
    const task = await this.damagedTasks.read(this.tasks.get(workspaceId, ownerId, id), {
      workspaceId,
      ownerId,
      id,
    });
    return task !== undefined;
  }

  /**
   * A task as boot reads it: one that does not parse stops the boot, named, with what to do
   * (storage/atomic.ts readJsonAtBoot), instead of a stack trace out of the CLI.
   */
  async taskAtBoot(workspaceId: string, ownerId: string, id: string): Promise<Task | undefined> {
    if (!isRecordId(id)) return undefined;
    return (await readJsonAtBoot(join(this.storage.ownerDir(workspaceId, ownerId), `${id}.json`))) as
      | Task
      | undefined;
  }

  /** The owners with a folder in the workspace's partition. */
  async owners(workspaceId: string): Promise<string[]> {
    return (await namesIn(this.storage.dir(workspaceId))).filter(isPrincipalId);
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
