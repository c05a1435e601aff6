import type { Logger } from "../../log.ts";
import type { TaskBootIndex } from "./boot-index.ts";
import type { Task } from "./model.ts";
import type { TaskFiles } from "./task-files.ts";

/**
 * After a create or update that indexed `task` failed: its entry goes unless the record on disk
 * has a trigger (a write that failed after its commit), so a write its caller's access refused,
 * or whose workspace was archived under it, leaves no entry. The index keeps its rule — an entry
 * too many (boot drops it, boot-index.ts), never one too few: a record that cannot be read keeps
 * its entry, and what fails here is logged, not thrown over the write's own error.
 */
export async function unscheduleUnwritten(
  index: Pick<TaskBootIndex, "removeSchedule">,
  files: Pick<TaskFiles, "tasks">,
  log: Logger,
  task: Task,
): Promise<void> {
  try {
    const stored = await files.tasks.get(task.workspaceId, task.ownerId, task.id);
    if (!stored?.trigger) await index.removeSchedule(task);
  } catch (error) {
    log.warn(
      { err: error, workspaceId: task.workspaceId, taskId: task.id },
      "the schedule entry of a task whose write failed is kept; the next boot drops it if the task has no trigger",
    );
  }
}
