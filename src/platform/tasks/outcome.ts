import type { CallToolResult } from "@modelcontextprotocol/client";
import { AccountDeactivated, AtriumError, WorkspaceNotFound } from "../../errors.ts";
import type { Logger } from "../../log.ts";
import { CheckTooCostly } from "../json-schema/check-too-costly.ts";
import type { Execution, Run, RunError, Task } from "./model.ts";
import { compileSchema, schemaErrors } from "./schemas.ts";

const MAX_ERROR_CHARS = 2000;

/** Why a run's call was stopped before it answered. */
export type AbortReason = "timeout" | "cancel" | "shutdown";

/** How a run ends that was stopped before its call answered. */
export const ABORTED: Record<AbortReason, Outcome> = {
  timeout: {
    execution: "timed_out",
    error: {
      code: "timed_out",
      message: "The tool call did not end within the task's timeout and was cancelled.",
    },
  },
  cancel: { execution: "cancelled", error: { code: "cancelled", message: "The run was cancelled." } },
  shutdown: {
    execution: "interrupted",
    error: { code: "interrupted", message: "Atrium stopped while this run was in flight." },
  },
};

/**
 * A refusal by the dispatch (membership, scope) is recorded in its own words, exactly as the
 * person would get it; `reason` says which check it was about when that is the owner's standing.
 * Anything else is logged under the run's id and recorded without its text.
 */
export function failedOutcome(run: Run, error: unknown, log: Logger): Outcome {
  if (error instanceof WorkspaceNotFound) {
    return {
      execution: "failed",
      error: { code: error.code, message: error.message, reason: "owner_not_member" },
    };
  }
  if (error instanceof AccountDeactivated) {
    return {
      execution: "failed",
      error: { code: error.code, message: error.message, reason: "owner_deactivated" },
    };
  }
  if (error instanceof AtriumError) {
    return { execution: "failed", error: { code: error.code, message: error.message } };
  }
  log.error({ err: error, runId: run.id }, "task run failed unexpectedly");
  return {
    execution: "failed",
    error: {
      code: "internal_error",
      message: `Atrium hit an unexpected error; it is logged under ${run.id}.`,
    },
  };
}

/** How a run ended: its execution and, only for a call that succeeded, its assessment. */
export interface Outcome {
  execution: Exclude<Execution, "running">;
  error?: RunError;
  assessment?: Run["assessment"];
}

/**
 * A finished call as a run's outcome. An `isError` result is a failed execution. A result that
 * came back is `succeeded` whatever it says, and only then assessed against the output schema:
 * a tool that ran fine and returned the wrong thing is `succeeded` + `rejected`, two answers to
 * two questions, never merged (ADR 0044).
 */
export function outcomeOf(task: Task, result: CallToolResult): Outcome {
  if (result.isError) {
    return {
      execution: "failed",
      error: { code: "tool_error", message: textOf(result).slice(0, MAX_ERROR_CHARS) },
    };
  }
  if (!task.outputSchema) return { execution: "succeeded", assessment: { status: "not_assessed" } };
  const output = outputOf(result);
  if (output === undefined) {
    return {
      execution: "succeeded",
      assessment: {
        status: "rejected",
        errors: ["The result has no structured output (structuredContent, or text that is JSON) to check."],
      },
    };
  }
  const errors = assessmentErrors(task.outputSchema, output.value);
  return {
    execution: "succeeded",
    assessment: errors.length === 0 ? { status: "accepted" } : { status: "rejected", errors },
  };
}

/**
 * What the output schema finds wrong with `output`. An output too costly to check (a large result
 * against patterns, ADR 0104; many items against unions, ADR 0157) is not accepted: the run
 * succeeded, its output is not known good.
 */
function assessmentErrors(schema: Record<string, unknown>, output: unknown): string[] {
  try {
    return schemaErrors(compileSchema("outputSchema", schema), output);
  } catch (error) {
    if (!(error instanceof CheckTooCostly)) throw error;
    return [`The output is too costly to check against the outputSchema: ${error.message}.`];
  }
}

/** The output the schema reads: `structuredContent`, else one text block that parses as JSON. */
function outputOf(result: CallToolResult): { value: unknown } | undefined {
  if (result.structuredContent !== undefined) return { value: result.structuredContent };
  const [only, ...rest] = result.content;
  if (only?.type !== "text" || rest.length > 0) return undefined;
  try {
    return { value: JSON.parse(only.text) };
  } catch {
    return undefined;
  }
}

/** The text blocks of a result, for a message; "The tool failed." when it has none. */
export function textOf(result: CallToolResult): string {
  return (
    result.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("\n") ||
    "The tool failed."
  );
}
