import { InvalidInput } from "../../errors.ts";
import { CheckTooCostly } from "../json-schema/check-too-costly.ts";
import type { Task } from "./model.ts";
import { compileSchema, schemaErrors } from "./schemas.ts";

/** A run's input: an object, and valid against the task's input schema; none without one. */
export function checkInput(task: Task, input: Record<string, unknown>): void {
  if (!task.inputSchema) {
    if (Object.keys(input).length > 0) {
      throw new InvalidInput("This task takes no input: it has no inputSchema.");
    }
    return;
  }
  let errors: string[];
  try {
    errors = schemaErrors(compileSchema("inputSchema", task.inputSchema), input);
  } catch (error) {
    if (!(error instanceof CheckTooCostly)) throw error;
    throw new InvalidInput(
      `The input is too costly to check against the task's inputSchema: ${error.message}.`,
    );
  }
  if (errors.length > 0) {
    throw new InvalidInput(`The input does not match the task's inputSchema: ${errors.join("; ")}.`);
  }
}
