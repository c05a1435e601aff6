import * as z from "zod";
import type { Caller } from "../../sources/caller-meta.ts";
import { joinToolName } from "../../sources/tool-names.ts";
import { AppTools } from "../app-tools.ts";
import { pageInput, platformInput } from "../platform-tool.ts";
import type { Run, Task } from "./model.ts";
import { type Asker, DEFAULT_RUNS_PAGE, MAX_RUNS_PAGE, type Tasks } from "./tasks.ts";

const RUN_TOOL = joinToolName("tasks", "run");
const GET_RUN_TOOL = joinToolName("tasks", "get_run");
const taskId = z.string().describe("The task id, tsk_ followed by 24 hex digits.");
const runId = z.string().describe("The run id, run_ followed by 24 hex digits.");
const object = z.record(z.string(), z.unknown());

// Shapes only: every field is checked, with words a model can act on, by definition.ts.
const definition = {
  name: z.string().describe("A short name for the task."),
  description: z.string().optional().describe("What the task is for."),
  action: z
    .strictObject({ tool: z.string(), arguments: object.optional() })
    .describe("The tool to call as you, named as tools/list gives it, and its arguments."),
  inputSchema: object
    .optional()
    .describe(
      "A JSON Schema for a run's input; the input is checked against it and merged into the arguments.",
    ),
  outputSchema: object
    .optional()
    .describe(
      "A JSON Schema the result's structured output must meet: a run that does not is assessed `rejected`.",
    ),
  limits: z
    .strictObject({ timeoutSeconds: z.number().optional(), maxConcurrentRuns: z.number().optional() })
    .optional()
    .describe(
      "How long a run may take before it is cancelled, and how many runs may go at once (default 1).",
    ),
  trigger: z
    .union([
      z.strictObject({ cron: z.string(), timezone: z.string() }),
      z.strictObject({ everySeconds: z.number() }),
    ])
    .optional()
    .describe(
      'When it runs by itself: {"cron": "0 9 * * 1-5", "timezone": "Europe/Paris"} or {"everySeconds": 3600}. None: it runs when started.',
    ),
  visibility: z
    .enum(["private", "shared"])
    .optional()
    .describe("private (default): yours alone. shared: every member sees and runs it."),
};

/** The tasks app's tools, one table for every workspace (each call brings its workspace): the caller's tasks and the shared ones. */
export function createTasksTools(tasks: Tasks): AppTools {
  const tools = new AppTools("atrium-tasks");
  const tool =
    <A>(run: (asker: Asker, args: A) => Promise<ReturnType<typeof answer>>) =>
    (caller: Caller, args: A) =>
      run(askerOf(caller), args);

  tools.registerTool(
    "create",
    {
      description:
        "Define a task: work Atrium runs for you, now or on a schedule, by calling one tool as you. " +
        `Start it with ${RUN_TOOL}; a task with a trigger also runs by itself.`,
      inputSchema: platformInput(definition),
      annotations: { title: "Create a task", readOnlyHint: false, destructiveHint: false },
    },
    tool(async (asker, args: Record<string, unknown>) => {
      const task = await tasks.create(asker, withoutUndefined(args));
      return answer(`Created ${task.id} (${task.name}).`, { task });
    }),
  );

  tools.registerTool(
    "get",
    {
      description: "Read one task's definition.",
      inputSchema: platformInput({ id: taskId }),
      annotations: { title: "Get a task", readOnlyHint: true },
    },
    tool(async (asker, args: { id: string }) => {
      const task = await tasks.get(asker, args.id);
      return answer(JSON.stringify(task, null, 2), { task });
    }),
  );

  tools.registerTool(
    "list",
    {
      description: "List the tasks you can see in this workspace: yours and the shared ones, newest first.",
      inputSchema: platformInput({}),
      annotations: { title: "List tasks", readOnlyHint: true },
    },
    tool(async (asker) => {
      const list = await tasks.list(asker);
      const lines = list.map(taskLine);
      return answer(lines.length > 0 ? lines.join("\n") : "No tasks.", { tasks: list });
    }),
  );

  tools.registerTool(
    "update",
    {
      description:
        "Change a task: give only the fields to change. null removes the trigger or a schema. " +
        "The owner and workspace admins change a shared task; only the owner changes its action and inputSchema. " +
        "Of a private task whose owner has left, an admin may only remove the trigger (null) or delete it.",
      inputSchema: platformInput({
        id: taskId,
        ...definition,
        name: definition.name.optional(),
        action: definition.action.optional(),
        inputSchema: definition.inputSchema.nullable(),
        outputSchema: definition.outputSchema.nullable(),
        trigger: definition.trigger.nullable(),
      }),
      annotations: {
        title: "Update a task",
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: true,
      },
    },
    tool(async (asker, args: { id: string } & Record<string, unknown>) => {
      const { id, ...change } = args;
      const task = await tasks.update(asker, id, withoutUndefined(change));
      return answer(`Updated ${task.id}.`, { task });
    }),
  );

  tools.registerTool(
    "delete",
    {
      description: "Delete a task and its run history; a run in flight is cancelled.",
      inputSchema: platformInput({ id: taskId }),
      annotations: { title: "Delete a task", readOnlyHint: false, destructiveHint: true },
    },
    tool(async (asker, args: { id: string }) => {
      await tasks.delete(asker, args.id);
      return answer(`Deleted ${args.id}.`, { id: args.id });
    }),
  );

  tools.registerTool(
    "run",
    {
      description:
        "Start a run of a task now. It runs in the background: this answers its run id at once; " +
        `poll ${GET_RUN_TOOL} with it until its execution is no longer \`running\`.`,
      inputSchema: platformInput({
        id: taskId,
        input: object.optional().describe("The run's input, checked against the task's inputSchema."),
        retryOf: runId
          .optional()
          .describe("A run of this task to retry; its input is used unless you give one."),
        idempotencyKey: z
          .string()
          .optional()
          .describe("A key of yours: starting again with the same key and input answers the first run."),
      }),
      // A run calls its action as the task's owner, and the action may be any tool, a delete too.
      annotations: { title: "Run a task", readOnlyHint: false, destructiveHint: true },
    },
    tool(async (asker, args: { id: string; input?: unknown; retryOf?: string; idempotencyKey?: string }) => {
      const { run, replayed } = await tasks.run(asker, args.id, args);
      // A replay says so, as REST's `Idempotent-Replayed` header does: nothing new was started.
      return replayed
        ? answer(`Already started as ${run.id} with this idempotencyKey: nothing new was started.`, {
            run,
            replayed,
          })
        : answer(`Started ${run.id}: poll ${GET_RUN_TOOL} with this id for how it ends.`, { run, replayed });
    }),
  );

  tools.registerTool(
    "runs",
    {
      description:
        "A task's run history, newest first, one page at a time: when `nextCursor` is returned, call again with it as `cursor`.",
      inputSchema: platformInput({ id: taskId, ...pageInput("Runs", MAX_RUNS_PAGE, DEFAULT_RUNS_PAGE) }),
      annotations: { title: "List a task's runs", readOnlyHint: true },
    },
    tool(async (asker, args: { id: string; cursor?: string; limit?: number }) => {
      const page = await tasks.runs(asker, args.id, args);
      const lines = page.runs.map(runLine);
      if (page.nextCursor) lines.push(`Older runs: call this tool again with cursor "${page.nextCursor}".`);
      return answer(lines.length > 0 ? lines.join("\n") : "No runs.", { ...page });
    }),
  );

  tools.registerTool(
    "get_run",
    {
      description:
        "Read one run: its trigger, input, times, execution (with any error), assessment and result.",
      inputSchema: platformInput({ id: runId }),
      annotations: { title: "Get a run", readOnlyHint: true },
    },
    tool(async (asker, args: { id: string }) => {
      const run = await tasks.getRun(asker, args.id);
      return answer(JSON.stringify(run, null, 2), { run });
    }),
  );

  tools.registerTool(
    "cancel_run",
    {
      description: "Cancel a run in flight: its tool call is cancelled and the run recorded `cancelled`.",
      inputSchema: platformInput({ id: runId }),
      annotations: { title: "Cancel a run", readOnlyHint: false, destructiveHint: true },
    },
    tool(async (asker, args: { id: string }) => {
      const run = await tasks.cancelRun(asker, args.id);
      return answer(`Cancelled ${run.id}.`, { run });
    }),
  );

  return tools;
}

/** The caller as the tasks see them, their access check with them to every write (adr/0154). */
function askerOf(caller: Caller): Asker {
  return {
    workspaceId: caller.workspaceId,
    principalId: caller.principalId,
    scopes: caller.scopes,
    access: caller.access,
  };
}

function answer(text: string, structuredContent: Record<string, unknown>) {
  return { content: [{ type: "text" as const, text }], structuredContent };
}

/** An omitted optional field arrives as undefined; only the fields given are a change. */
function withoutUndefined(args: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(args).filter(([, value]) => value !== undefined));
}

function taskLine(task: Task): string {
  const trigger = !task.trigger
    ? "no trigger"
    : "cron" in task.trigger
      ? `cron "${task.trigger.cron}" ${task.trigger.timezone}`
      : `every ${task.trigger.everySeconds}s`;
  return `${task.id}  ${task.name}  [${task.visibility}, ${trigger}]  ${task.action.tool}`;
}

function runLine(run: Run): string {
  return `${run.id}  ${run.startedAt}  ${run.trigger}  ${run.execution.status}  ${run.assessment.status}`;
}
