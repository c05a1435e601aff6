import { NotFound } from "../../errors.ts";
import type { AccessCheck } from "../../workspace/access-check.ts";
import type { RecordRef } from "./damaged-records.ts";
import type { Task } from "./model.ts";
import type { TaskFiles } from "./task-files.ts";

/**
 * The sequence of a task's next run, taken now, under the task's lock (TaskStore.whileExists):
 * one past the highest it has given, kept in its record (`lastSequence`) and written there before
 * the run's record is. So no two starts are given the same one; a start that fails after leaves a
 * gap; a first start after a boot or an idle drop need not read every run of the workspace to find
 * it (2,000 runs: ≈ 0.3–0.5 s before it answered, ADR 0171); and a run whose record cannot be read
 * meanwhile is still counted. A task stored without one (defined before it was kept, or edited by
 * hand) takes it from its runs (`readRuns`: the highest among them), read once. The stored one is
 * believed: a run holding a higher one was written by hand, and is ordered by startedAt among the
 * runs that share its sequence (loaded.ts startOrder). The record is reread and written whole
 * (TaskFiles.updateTask): one that is damaged or cannot be read is not written over, and the start
 * is refused. `access` (the starter's) is asked before it is written, as before the run's record
 * (adr/0154): one whose access has ended takes no sequence.
 */
export async function takeSequence(
  files: Pick<TaskFiles, "updateTask">,
  place: RecordRef,
  access: AccessCheck,
  known: Pick<Task, "lastSequence"> | undefined,
  readRuns: () => Promise<number>,
): Promise<{ task: Task; sequence: number }> {
  // Read before the record's lock is taken: reading the runs may be long, and its hooks write.
  const fromRuns = isHighWater(known?.lastSequence) ? 0 : await readRuns();
  const task = await files.updateTask(
    place,
    async (current) => {
      const stored = isHighWater(current.lastSequence) ? current.lastSequence : fromRuns;
      return { ...current, lastSequence: stored + 1 };
    },
    access,
  );
  // Its file removed by hand while the task is loaded: no run is recorded for a task that is gone.
  if (!task) throw new NotFound("task_not_found", "No task with that id in this workspace that you can see.");
  return { task, sequence: task.lastSequence as number };
}

/** A stored `lastSequence` a start counts from: a whole number from 0 up; anything else is read from the runs. */
function isHighWater(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}
