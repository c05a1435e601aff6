import type { Run, Task } from "./model.ts";
import type { ResultFiles } from "./result-files.ts";
import type { TaskFiles } from "./task-files.ts";

type Results = Pick<ResultFiles, "discard">;

/**
 * A run's record goes only after its result file (ResultFiles.discard): a record that names a
 * file is never removed while the file is there, so no file is left that no run names. When the
 * file cannot be deleted the record stays: unlisted while the workspace stays loaded, read again
 * after, and tried again by the next prune (a deleted task's run: by the next read, `orphaned`).
 */
export async function forgetRunRecord(
  files: TaskFiles,
  results: Results,
  task: Pick<Task, "workspaceId" | "ownerId">,
  runId: string,
): Promise<void> {
  // A record that does not parse goes too: which result file it named cannot be read, so that
  // file, if any, stays among the owner's files (test/integration/tasks-damaged.test.ts).
  const run = await files.run(task.workspaceId, task.ownerId, runId);
  if (run && !(await results.discard(run))) return;
  await files.runs.delete(task.workspaceId, task.ownerId, runId);
}

/**
 * Forgets runs whose task is gone (told through `orphaned`): each result file, then each record.
 * The task is asked for again first: a run is never removed while its task is there.
 */
export async function forgetOrphanRuns(files: TaskFiles, results: Results, runs: readonly Run[]) {
  for (const run of runs) {
    // A task whose record does not parse is there: its runs stay for when it is restored.
    if (await files.hasTask(run.workspaceId, run.ownerId, run.taskId)) continue;
    if (await results.discard(run)) await files.runs.delete(run.workspaceId, run.ownerId, run.id);
  }
}
