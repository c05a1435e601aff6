import type { TaskBootIndex } from "./boot-index.ts";
import { DAMAGED } from "./damaged-records.ts";
import type { Task } from "./model.ts";
import type { TaskFiles } from "./task-files.ts";

/**
 * The tasks with a trigger in the active workspaces, read from the schedule index (built once by
 * walking the workspaces when the instance's tasks predate it); an entry whose task has no
 * trigger any more is dropped (ADR 0056).
 */
export async function triggeredAtBoot(
  index: TaskBootIndex,
  files: TaskFiles,
  activeIds: () => Iterable<string>,
  isActive: (workspaceId: string) => boolean,
): Promise<Task[]> {
  if (!(await index.built())) await buildIndex(index, files, activeIds());
  const triggered: Task[] = [];
  for (const entry of await index.scheduleEntries()) {
    // An archived workspace keeps its entries: its tasks are not armed while it is archived.
    if (!isActive(entry.workspaceId)) continue;
    const task = await files.taskAtBoot(entry.workspaceId, entry.ownerId, entry.taskId);
    // A damaged record (logged) keeps its entry: whether it has a trigger cannot be read, and a
    // restored file is armed by the next boot (test/integration/tasks-boot-damaged.test.ts).
    if (task === DAMAGED) continue;
    if (task?.trigger) triggered.push(task);
    else await index.removeSchedule({ ...entry, id: entry.taskId });
  }
  return triggered;
}

/** The first boot of an instance whose tasks predate the index: every workspace's, once. */
async function buildIndex(index: TaskBootIndex, files: TaskFiles, workspaceIds: Iterable<string>) {
  for (const workspaceId of workspaceIds) {
    for (const ownerId of await files.owners(workspaceId)) {
      for (const id of await files.tasks.ids(workspaceId, ownerId)) {
        // Indexed at its path, never at the ids its text names; a damaged one too, its trigger
        // unknown: the index is a superset, and boot skips it while it stays damaged.
        const task = await files.taskAtBoot(workspaceId, ownerId, id);
        if (task === DAMAGED || task?.trigger) await index.addSchedule({ workspaceId, ownerId, id });
      }
    }
  }
  await index.markBuilt();
}
