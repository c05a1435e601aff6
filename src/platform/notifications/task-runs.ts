import type { TaskRunSummary } from "../../kernel/events.ts";
import { type NotificationDraft, titleNaming } from "./model.ts";

const OWNER_GONE = new Set(["owner_not_member", "owner_deactivated"]);
const NOT_SUCCEEDED = new Set(["failed", "timed_out", "interrupted"]);

/**
 * What the inbox records about a finished task run, if anything. A run refused because its
 * owner left or was deactivated goes to the whole workspace: the owner can no longer read it,
 * and an admin is who can act (the task's name stays out: the task may be private). A failed
 * or rejected run goes to its owner alone. A cancelled run was someone's choice: no entry.
 */
export function taskRunNotice(run: TaskRunSummary): NotificationDraft | undefined {
  const data = { taskId: run.taskId, runId: run.id };
  if (run.error?.reason && OWNER_GONE.has(run.error.reason)) {
    const why = run.error.reason === "owner_deactivated" ? "was deactivated" : "is no longer a member";
    return {
      title: "A task did not run: its owner is no longer active in this workspace",
      body: `Task ${run.taskId} runs as its owner, ${run.taskOwnerId}, who ${why}. Its run was refused: "${run.error.message}"`,
      severity: "warning",
      data: { ...data, ownerId: run.taskOwnerId },
    };
  }
  if (NOT_SUCCEEDED.has(run.execution)) {
    return {
      title: titleNaming(
        run.taskName,
        (name) => `Task "${name}" run ${run.execution.replace("_", " ")}`,
        run.taskId,
      ),
      ...(run.error ? { body: run.error.message.slice(0, 4000) } : {}),
      severity: "error",
      to: run.taskOwnerId,
      data,
    };
  }
  if (run.assessment === "rejected") {
    return {
      title: titleNaming(
        run.taskName,
        (name) => `Task "${name}" output was rejected by its output schema`,
        run.taskId,
      ),
      body: "The tool ran, and its output does not meet the task's output schema: see the run's assessment.",
      severity: "warning",
      to: run.taskOwnerId,
      data,
    };
  }
  return undefined;
}
