import { isPrincipalId, isRecordId, isWorkspaceId } from "../../ids.ts";
import { readJsonAtBoot } from "../../storage/atomic.ts";
import { KeyedLock } from "../../storage/keyed-lock.ts";
import type { StorageLayout } from "../../storage/paths.ts";
import { JsonRecords } from "../../storage/records.ts";
import type { Task } from "./model.ts";

/** Where a task with a trigger is found without reading its workspace. */
export interface ScheduleEntry {
  workspaceId: string;
  ownerId: string;
  taskId: string;
}

interface RunningMark {
  workspaceId: string;
}

// Written last by the walk that built the index from the workspaces (the first boot of an
// instance whose tasks predate it); until it exists, the index is not trusted.
const BUILT = "index-built-v1";

/**
 * What boot reads instead of every workspace (ADR 0056), two instance-wide folders under
 * `_instance/tasks/`:
 *
 * - `schedules/`: one entry per task with a trigger. The index is a superset of the triggered
 *   tasks: an entry is written before the write that gives a task its trigger and removed after
 *   the write that takes it away (or deletes the task), so a crash between the two leaves an
 *   entry too many, never one too few. Boot reads each entry's task and drops an entry whose task
 *   has no trigger any more; one whose record is damaged is kept, unarmed (ADR 0147).
 * - `running/`: one mark per workspace a run was started in by this process, written before the
 *   run's first record and removed once a graceful stop has recorded its runs (kept when a run's
 *   end could not be written, runner.ts `record`). A mark found at
 *   boot is a crash's: that workspace is loaded at once, which records its left-`running` runs
 *   `interrupted` (and tells the workspace) without waiting for its first use.
 *
 * One process holds a data root (src/instance/lock.ts), and in it one update of a task runs at a
 * time, its entry's change included (TaskStore.update), and a workspace's mark is written or
 * removed by one call at a time (`marking`), so no two writers race on an entry or a mark.
 */
export class TaskBootIndex {
  private readonly schedules: JsonRecords<ScheduleEntry | { built: true }>;
  private readonly running: JsonRecords<RunningMark>;
  /** The workspaces marked by this process: a run start writes its mark once. */
  private readonly marked = new Set<string>();
  private readonly marking = new KeyedLock();
  private readonly builtFile: string;

  constructor(layout: StorageLayout) {
    this.schedules = new JsonRecords(layout, "tasks/schedules");
    this.builtFile = layout.collectionFile("tasks/schedules", BUILT);
    this.running = new JsonRecords(layout, "tasks/running");
  }

  /**
   * Whether the schedule index was built (else the caller walks the workspaces once). Read at
   * boot: a mark that does not parse stops it, named (moving it out has the index built again).
   */
  async built(): Promise<boolean> {
    return (await readJsonAtBoot(this.builtFile)) !== undefined;
  }

  async markBuilt(): Promise<void> {
    await this.schedules.put(BUILT, { built: true });
  }

  async addSchedule(task: Pick<Task, "workspaceId" | "ownerId" | "id">): Promise<void> {
    const entry = { workspaceId: task.workspaceId, ownerId: task.ownerId, taskId: task.id };
    await this.schedules.put(entryId(entry), entry);
  }

  async removeSchedule(task: Pick<Task, "workspaceId" | "ownerId" | "id">): Promise<void> {
    await this.schedules.delete(
      entryId({ workspaceId: task.workspaceId, ownerId: task.ownerId, taskId: task.id }),
    );
  }

  /** Removes every schedule entry of a workspace whose archive is being removed (ADR 0113). */
  async removeWorkspace(workspaceId: string): Promise<void> {
    for (const entry of await this.scheduleEntries()) {
      if (entry.workspaceId === workspaceId) {
        await this.removeSchedule({ workspaceId, ownerId: entry.ownerId, id: entry.taskId });
      }
    }
  }

  /** Every schedule entry, read from its name (an entry's file is never opened). */
  async scheduleEntries(): Promise<ScheduleEntry[]> {
    return (await this.schedules.ids()).flatMap((id) => {
      const [workspaceId = "", ownerId = "", taskId = ""] = id.split("-");
      const valid = isWorkspaceId(workspaceId) && isPrincipalId(ownerId) && isRecordId(taskId);
      return valid ? [{ workspaceId, ownerId, taskId }] : [];
    });
  }

  /**
   * Marks the workspace as having runs in flight here, once per process. Run starts call it
   * before any lock of theirs, so a workspace's marks and clears take turns here: two starts that
   * both wrote the mark raced one put's undo against the other's stored mark (ADR 0166, amended
   * 2026-12-07; test/unit/platform/tasks/boot-index.test.ts).
   */
  async markRunning(workspaceId: string): Promise<void> {
    await this.marking.run(workspaceId, async () => {
      if (this.marked.has(workspaceId)) return;
      await this.running.put(workspaceId, { workspaceId });
      this.marked.add(workspaceId);
    });
  }

  /** The workspaces a crash left marked. */
  async runningMarks(): Promise<string[]> {
    return (await this.running.ids()).filter(isWorkspaceId);
  }

  async clearRunning(workspaceId: string): Promise<void> {
    await this.marking.run(workspaceId, async () => {
      await this.running.delete(workspaceId);
      this.marked.delete(workspaceId);
    });
  }

  /** After a graceful stop recorded its runs: no mark of this process is a crash's, but those `kept`. */
  async clearAllRunning(kept: ReadonlySet<string>): Promise<void> {
    for (const workspaceId of [...this.marked]) {
      if (!kept.has(workspaceId)) await this.clearRunning(workspaceId);
    }
  }
}

/** `<ws>-<owner>-<task>`: the three ids hold no `-`, so the name splits back into them. */
function entryId(entry: ScheduleEntry): string {
  return `${entry.workspaceId}-${entry.ownerId}-${entry.taskId}`;
}
