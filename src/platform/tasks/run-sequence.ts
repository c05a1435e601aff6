import { NotFound } from "../../errors.ts";
import type { AccessCheck } from "../../workspace/access-check.ts";
import type { RecordRef } from "./damaged-records.ts";
import type { Run, Task } from "./model.ts";
import type { TaskFiles } from "./task-files.ts";

/**
 * The sequence of a task's next run, taken now, under the task's lock (TaskStore.whileExists):
 * one past the highest it has given, kept in its record (`lastSequence`) and written there before
 * the run's record is. So no two starts are given the same one; a start that fails after leaves a
 * gap; a first start after a boot or an idle drop need not read every run of the workspace to find
 * it (2,000 runs: ≈ 0.3–0.5 s before it answered, ADR 0171); and a run whose record cannot be read
 * meanwhile is still counted. A task stored without one (defined before it was kept, or edited by
 * hand) takes it from its runs (`readRuns`: the highest among them), read once. A stored one below
 * its runs' (its record restored from a backup while newer runs stayed) would number new runs
 * below those kept, and the prune would take each as the oldest: the highest among the task's runs
 * counts too when they are in memory (`counted.inMemory`; none is read for it), and a run's end,
 * whose prune reads them, raises the record to it (`raiseSequence`). The record is reread and
 * written whole (TaskFiles.updateTask): one that is damaged or cannot be read is not written over,
 * and the start is refused. `access` (the starter's) is asked before it is written, as before the run's record
 * (adr/0154): one whose access has ended takes no sequence.
 */
export async function takeSequence(
  files: Pick<TaskFiles, "updateTask">,
  place: RecordRef,
  access: AccessCheck,
  counted: { known: Pick<Task, "lastSequence"> | undefined; inMemory: number },
  readRuns: () => Promise<number>,
): Promise<{ task: Task; sequence: number }> {
  // Read before the record's lock is taken: reading the runs may be long, and its hooks write.
  const fromRuns = isHighWater(counted.known?.lastSequence) ? counted.inMemory : await readRuns();
  const task = await files.updateTask(
    place,
    async (current) => {
      const stored = isHighWater(current.lastSequence) ? Math.max(current.lastSequence, fromRuns) : fromRuns;
      return { ...current, lastSequence: stored + 1 };
    },
    access,
  );
  // Its file removed by hand while the task is loaded: no run is recorded for a task that is gone.
  if (!task) throw new NotFound("task_not_found", "No task with that id in this workspace that you can see.");
  return { task, sequence: task.lastSequence as number };
}

/**
 * Heals a task's record restored below its runs (ADR 0171's amendment), as a run ends, under the
 * task's lock: `highest` is the highest sequence among its runs, in memory since the prune read
 * them. Only while the record as reread holds less: the run that ended, numbered below `highest`
 * (started after the restore), is renumbered one past it, the record first, so the next prune,
 * by sequence, takes it for the newest it is and not the oldest, and a crash between leaves a
 * gap, never two runs alike; otherwise the record is raised to `highest`. A record without a
 * `lastSequence` is left to its next start, which reads the runs; nothing past a safe integer is
 * taken. Answers the task as written and the run's new sequence, if any. A repair, not anyone's
 * write: no caller's access is asked, as for a run's end.
 */
export async function raiseSequence(
  files: Pick<TaskFiles, "updateTask" | "tasks" | "runs">,
  place: RecordRef,
  ended: Pick<Run, "id" | "sequence">,
  highest: number,
): Promise<{ task?: Task; renumbered?: number }> {
  const behind = ended.sequence !== undefined && ended.sequence < highest;
  // A record as high as its runs was not restored: a run ending below a run still going is not moved.
  const wanted = (stored: unknown): number | undefined => {
    if (!isHighWater(stored) || stored >= highest) return undefined;
    const next = behind ? highest + 1 : highest;
    return Number.isSafeInteger(next) ? next : undefined;
  };
  // The record as on disk, not the loaded copy: restored while loaded, the copy is still the higher.
  // Read first so a run's end that finds it as high writes nothing. One that cannot be read is
  // left as it is: the next start, which rereads it too, refuses and says so.
  const stored = await files.tasks.get(place.workspaceId, place.ownerId, place.id).catch(() => undefined);
  if (wanted(stored?.lastSequence) === undefined) return {};
  let renumbered: number | undefined;
  const task = await files.updateTask(place, async (current) => {
    const next = wanted(current.lastSequence);
    if (next === undefined) return current;
    if (behind) renumbered = next;
    return { ...current, lastSequence: next };
  });
  if (!task || renumbered === undefined) return { task };
  const sequence = renumbered;
  const run = await files.runs.update(place.workspaceId, place.ownerId, ended.id, (current) => ({
    ...current,
    sequence,
  }));
  return { task, renumbered: run && sequence };
}

/** A stored `lastSequence` a start counts from: a whole number from 0 up; anything else is read from the runs. */
function isHighWater(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}
