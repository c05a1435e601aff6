import type { IdempotencyKeys } from "./idempotency.ts";
import {
  LoadedRuns,
  type LoadedWorkspace,
  type LoadHooks,
  placeRuns,
  type RunHeader,
  UNREADABLE,
} from "./loaded.ts";
import type { Run } from "./model.ts";
import type { TaskFiles } from "./task-files.ts";

/**
 * Every kept run of the workspace's tasks, in the order they started, and the idempotency keys
 * they hold; a run found `running` and not in flight here is recorded before this answers. A
 * record that cannot be read is left out and named in the answer's `unreadable`, for `readAgain`:
 * every start of every task waits for this read (its sequence, ADR 0056), so one record's fault
 * is not to fail it.
 */
export async function readRuns(
  files: TaskFiles,
  workspaceId: string,
  loaded: LoadedWorkspace,
  keys: IdempotencyKeys,
  hooks: LoadHooks,
): Promise<LoadedRuns> {
  const runs = new LoadedRuns(keys);
  const { found, unreadable } = await files.runHeaders(workspaceId, (run) => keepWhole(loaded, run));
  runs.unreadable.push(...unreadable);
  await place(found, loaded, runs, hooks);
  return runs;
}

/**
 * The run records a read could not read, read again: those that read now take their place among
 * their tasks' runs (a fault that passed: EIO, EMFILE); those that still cannot are kept for the
 * next call; those gone or damaged are dropped (a damaged one is logged). One read again at a
 * time: a call waits for one under way, so it is not answered without a run being put back, and
 * then reads what is still unread itself, since that one's reads may predate the call.
 */
export async function readAgain(
  files: TaskFiles,
  loaded: LoadedWorkspace,
  runs: LoadedRuns,
  hooks: LoadHooks,
): Promise<void> {
  // Its failure is its own call's; this call reads again below.
  await runs.readingAgain?.catch(() => undefined);
  if (runs.unreadable.length === 0) return;
  if (!runs.readingAgain) {
    const reading = readUnread(files, loaded, runs, hooks).finally(() => {
      if (runs.readingAgain === reading) runs.readingAgain = undefined;
    });
    runs.readingAgain = reading;
  }
  await runs.readingAgain;
}

async function readUnread(files: TaskFiles, loaded: LoadedWorkspace, runs: LoadedRuns, hooks: LoadHooks) {
  const places = runs.unreadable.splice(0);
  const found: RunHeader[] = [];
  for (const place of places) {
    const header = await files.runHeader(place, (run) => keepWhole(loaded, run));
    if (header === UNREADABLE) runs.unreadable.push(place);
    else if (header) found.push(header);
  }
  await place(found, loaded, runs, hooks);
}

/** Puts runs read in their tasks' order, and shows the load hooks what they found. */
async function place(found: RunHeader[], loaded: LoadedWorkspace, runs: LoadedRuns, hooks: LoadHooks) {
  const { unfinished, orphaned } = placeRuns(found, loaded.tasks, runs);
  await hooks.unfinished(unfinished);
  if (orphaned.length > 0) hooks.orphaned(orphaned);
}

/** Whether a read keeps a run's whole record: a hook needs it (LoadHooks). */
function keepWhole(loaded: LoadedWorkspace, run: Run): boolean {
  return !loaded.tasks.has(run.taskId) || run.execution.status === "running";
}
