import type { EventPublisher, TaskRunSummary } from "../../kernel/events.ts";
import type { Run, Task } from "./model.ts";

/**
 * Tells the workspace a run started or finished, as a summary of it: a private task's runs only
 * to its owner, a shared task's to every member. `task` is the task as the caller means it to be
 * told (TaskRunner tells a run's end by the task as it is when the run ends).
 */
export function announceRun(
  events: EventPublisher,
  type: "task.run.started" | "task.run.finished",
  task: Task,
  run: Run,
): void {
  const summary: TaskRunSummary = {
    id: run.id,
    taskId: task.id,
    taskName: task.name,
    taskOwnerId: task.ownerId,
    trigger: run.trigger,
    execution: run.execution.status,
    assessment: run.assessment.status,
    ...(run.execution.error ? { error: run.execution.error } : {}),
  };
  const scoped = { workspaceId: task.workspaceId, run: summary };
  const event = task.visibility === "private" ? { ...scoped, ownerId: task.ownerId } : scoped;
  // Spelled per type: the event union pairs each type with its own payload.
  if (type === "task.run.started") events.publish({ type, ...event });
  else events.publish({ type, ...event });
}
