import { newRunId, newTaskId, type Run, type Task } from "../../src/platform/tasks/model.ts";

/** A private task of `ownerId` in `workspaceId`, made at `at` (epoch ms), with `fields` over it. */
export function taskRecord(
  workspaceId: string,
  ownerId: string,
  at: number,
  fields: Partial<Task> = {},
): Task {
  const now = new Date(at).toISOString();
  return {
    id: newTaskId(),
    workspaceId,
    ownerId,
    name: "t",
    description: "",
    action: { tool: "probe__echo", arguments: {} },
    limits: { timeoutSeconds: 60, maxConcurrentRuns: 1 },
    visibility: "private",
    createdAt: now,
    updatedAt: now,
    ...fields,
  };
}

/** A manual run of `task` its owner started at `at` that succeeded, with `fields` over it. */
export function runRecord(task: Task, at: number, fields: Partial<Run> = {}): Run {
  return {
    id: newRunId(),
    taskId: task.id,
    workspaceId: task.workspaceId,
    ownerId: task.ownerId,
    trigger: "manual",
    startedBy: task.ownerId,
    input: {},
    startedAt: new Date(at).toISOString(),
    execution: { status: "succeeded" },
    assessment: { status: "not_assessed" },
    ...fields,
  };
}
