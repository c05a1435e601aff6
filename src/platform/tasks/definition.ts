import { InvalidInput } from "../../errors.ts";
import { splitToolName } from "../../sources/tool-names.ts";
import { isUnshowable } from "../../text.ts";
import { CheckTooCostly } from "../json-schema/check-too-costly.ts";
import type { TaskSettings } from "./config.ts";
import { checkCron } from "./cron-trigger.ts";
import type { Task, TaskAction, TaskLimits, TaskTrigger, Visibility } from "./model.ts";
import { compileSchema, schemaErrors } from "./schemas.ts";

/** The tasks app's own source name: a task never calls a tasks tool (no task starts a task). */
export const TASKS_SOURCE = "tasks";
const MAX_NAME_CHARS = 100;
const MAX_DESCRIPTION_CHARS = 2000;
const MAX_DEFINITION_BYTES = 64 * 1024;
const MAX_INTERVAL_SECONDS = 366 * 24 * 60 * 60;
const FIELDS = new Set([
  "name",
  "description",
  "action",
  "inputSchema",
  "outputSchema",
  "limits",
  "trigger",
  "visibility",
]);

/** Who defines a task, and what their credential allows (absent: not scoped). */
export interface Definer {
  workspaceId: string;
  principalId: string;
  scopes?: readonly string[] | undefined;
}

/** A new task from a create request, every field checked; bad input is refused whole. */
export function defineTask(
  body: Record<string, unknown>,
  definer: Definer,
  settings: TaskSettings,
  ids: { id: string; now: string },
): Task {
  checkFields(body);
  if (body.name === undefined) throw new InvalidInput('A task needs a "name".');
  if (body.action === undefined) throw new InvalidInput('A task needs an "action": { "tool", "arguments" }.');
  const task: Task = {
    id: ids.id,
    workspaceId: definer.workspaceId,
    ownerId: definer.principalId,
    name: "",
    description: "",
    action: { tool: "", arguments: {} },
    limits: { timeoutSeconds: settings.defaultTimeoutSeconds, maxConcurrentRuns: 1 },
    visibility: "private",
    createdAt: ids.now,
    updatedAt: ids.now,
    lastSequence: 0,
  };
  return applyChange(task, body, definer, settings);
}

/**
 * `current` with the fields `body` gives changed; `null` for `trigger`, `inputSchema` or
 * `outputSchema` removes it. A trigger given again starts its schedule afresh from now.
 */
export function redefineTask(
  current: Task,
  body: Record<string, unknown>,
  definer: Definer,
  settings: TaskSettings,
  now: string,
): Task {
  checkFields(body);
  return applyChange({ ...current, updatedAt: now }, body, definer, settings);
}

function applyChange(
  base: Task,
  body: Record<string, unknown>,
  definer: Definer,
  settings: TaskSettings,
): Task {
  // Measured before anything is compiled: a schema's compile costs time and memory with its
  // size, so a definition too large to keep is refused before it is paid for (ADR 0085).
  checkDefinitionSize(proposed(base, body));
  const task: Task = { ...base };
  if (body.name !== undefined) task.name = checkName(body.name);
  if (body.description !== undefined) task.description = checkDescription(body.description);
  if (body.action !== undefined) task.action = checkAction(body.action);
  for (const field of ["inputSchema", "outputSchema"] as const) {
    if (!(field in body)) continue;
    const value = body[field];
    if (value === null) delete task[field];
    else task[field] = checkSchema(field, value);
  }
  if (body.limits !== undefined) task.limits = checkLimits(body.limits, task.limits, settings);
  if ("trigger" in body) {
    // A trigger set now counts its schedule from now: nothing before it was missed.
    delete task.lastScheduledAt;
    if (body.trigger === null) delete task.trigger;
    else {
      task.trigger = checkTrigger(body.trigger, settings.minIntervalSeconds);
      task.lastScheduledAt = base.updatedAt;
    }
  }
  if (body.visibility !== undefined) task.visibility = checkVisibility(body.visibility);
  // The credential that sets the action bounds what its runs may call (ADR 0044): stamped when
  // the task is created and when its owner changes the action (only the owner may), never by
  // another edit — an admin renaming the task must not lift, or lend their token's, limits.
  if (body.action !== undefined) {
    if (definer.scopes === undefined) delete task.scopes;
    else task.scopes = [...definer.scopes];
  }
  if (task.trigger && task.inputSchema) checkEmptyInputTaken(task.inputSchema);
  checkDefinitionSize(task);
  return task;
}

/** `base` with `body`'s fields as given, unchecked (`null` removes): what the change would store. */
function proposed(base: Task, body: Record<string, unknown>): Record<string, unknown> {
  const next: Record<string, unknown> = { ...base };
  for (const [field, value] of Object.entries(body)) {
    if (value === null) delete next[field];
    else next[field] = value;
  }
  return next;
}

function checkDefinitionSize(definition: unknown): void {
  if (Buffer.byteLength(JSON.stringify(definition)) > MAX_DEFINITION_BYTES) {
    throw new InvalidInput(`A task's definition is at most ${MAX_DEFINITION_BYTES} bytes as JSON.`);
  }
}

function checkFields(body: Record<string, unknown>): void {
  const extra = Object.keys(body).filter((key) => !FIELDS.has(key));
  if (extra.length > 0) {
    throw new InvalidInput(
      `A task has no field ${extra.map((key) => `"${key}"`).join(", ")}; its fields are ${[...FIELDS].join(", ")}.`,
    );
  }
}

function checkName(value: unknown): string {
  if (
    typeof value !== "string" ||
    value.trim() === "" ||
    value.length > MAX_NAME_CHARS ||
    isUnshowable(value)
  ) {
    throw new InvalidInput(`A task's "name" is 1 to ${MAX_NAME_CHARS} characters on one line.`);
  }
  return value;
}

function checkDescription(value: unknown): string {
  if (typeof value !== "string" || value.length > MAX_DESCRIPTION_CHARS) {
    throw new InvalidInput(`A task's "description" is text of at most ${MAX_DESCRIPTION_CHARS} characters.`);
  }
  return value;
}

function checkAction(value: unknown): TaskAction {
  if (!isObject(value)) throw new InvalidInput('"action" is an object: { "tool", "arguments" }.');
  const extra = Object.keys(value).filter((key) => key !== "tool" && key !== "arguments");
  if (extra.length > 0) throw new InvalidInput('"action" has only "tool" and "arguments".');
  const { tool, arguments: args = {} } = value;
  const parts = typeof tool === "string" ? splitToolName(tool) : undefined;
  if (!parts) {
    throw new InvalidInput('"action.tool" is a tool name exactly as tools/list gives it.');
  }
  if (parts.source === TASKS_SOURCE) throw new InvalidInput("A task cannot call a tasks tool.");
  if (!isObject(args)) throw new InvalidInput('"action.arguments" is a JSON object.');
  return { tool: tool as string, arguments: args };
}

function checkSchema(field: string, value: unknown): Record<string, unknown> {
  if (!isObject(value)) throw new InvalidInput(`"${field}" is a JSON Schema object.`);
  compileSchema(field, value);
  return value;
}

function checkLimits(value: unknown, current: TaskLimits, settings: TaskSettings): TaskLimits {
  if (!isObject(value))
    throw new InvalidInput('"limits" is an object: { "timeoutSeconds", "maxConcurrentRuns" }.');
  const extra = Object.keys(value).filter((key) => key !== "timeoutSeconds" && key !== "maxConcurrentRuns");
  if (extra.length > 0) throw new InvalidInput('"limits" has only "timeoutSeconds" and "maxConcurrentRuns".');
  const limits = { ...current };
  if (value.timeoutSeconds !== undefined) {
    limits.timeoutSeconds = wholeIn(
      "limits.timeoutSeconds",
      value.timeoutSeconds,
      1,
      settings.maxTimeoutSeconds,
    );
  }
  if (value.maxConcurrentRuns !== undefined) {
    limits.maxConcurrentRuns = wholeIn(
      "limits.maxConcurrentRuns",
      value.maxConcurrentRuns,
      1,
      settings.maxConcurrentRuns,
    );
  }
  return limits;
}

/**
 * A trigger as a task may hold one: what a write is refused for, and what a stored one (written by
 * hand, or under older rules) is not armed for (schedule.ts triggerRefusal).
 */
export function checkTrigger(value: unknown, minIntervalSeconds: number): TaskTrigger {
  if (isObject(value) && Object.keys(value).sort().join() === "cron,timezone") {
    const { cron, timezone } = value;
    if (typeof timezone !== "string" || !isTimeZone(timezone)) {
      throw new InvalidInput('"trigger.timezone" is an IANA time zone, e.g. "Europe/Paris" or "UTC".');
    }
    if (typeof cron !== "string") throw new InvalidInput('"trigger.cron" is a cron expression.');
    checkCron(cron, timezone, minIntervalSeconds);
    return { cron, timezone };
  }
  if (isObject(value) && Object.keys(value).join() === "everySeconds") {
    return {
      everySeconds: wholeIn(
        "trigger.everySeconds",
        value.everySeconds,
        minIntervalSeconds,
        MAX_INTERVAL_SECONDS,
      ),
    };
  }
  throw new InvalidInput(
    '"trigger" is { "cron", "timezone" } or { "everySeconds" }, or null for a task that runs only when started.',
  );
}

function checkVisibility(value: unknown): Visibility {
  if (value !== "private" && value !== "shared")
    throw new InvalidInput('"visibility" is "private" or "shared".');
  return value;
}

function wholeIn(field: string, value: unknown, min: number, max: number): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new InvalidInput(`"${field}" is a whole number from ${min} to ${max}.`);
  }
  return value;
}

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A triggered task runs with an empty input: its inputSchema must take one, and be cheap to check. */
function checkEmptyInputTaken(inputSchema: Record<string, unknown>): void {
  let errors: string[];
  try {
    errors = schemaErrors(compileSchema("inputSchema", inputSchema), {});
  } catch (error) {
    if (!(error instanceof CheckTooCostly)) throw error;
    throw new InvalidInput(
      `A task with a trigger runs with an empty input, and its inputSchema is too costly to check against an empty input: ${error.message}.`,
    );
  }
  if (errors.length > 0) {
    throw new InvalidInput(
      "A task with a trigger runs with an empty input, and its inputSchema refuses one: make its fields optional or remove the trigger.",
    );
  }
}
