import { BootError } from "../../errors.ts";
import type { ConfigSection } from "../../instance/schema.ts";

export interface TaskSettings {
  /** A task that names no timeout gets this one. */
  defaultTimeoutSeconds: number;
  /** No task may ask for a longer timeout. */
  maxTimeoutSeconds: number;
  /** No task may let more of its runs go at once than this. */
  maxConcurrentRuns: number;
  /** The shortest interval trigger a task may have. */
  minIntervalSeconds: number;
  /** How long an `Idempotency-Key` of a run start is remembered (docs/tasks.md). */
  idempotencyWindowHours: number;
  /** Each task keeps its newest finished runs up to this many; older ones are removed. */
  runsKeptPerTask: number;
  /** A tool result larger than this (as JSON) is stored as a file in the owner's files. */
  inlineResultBytes: number;
  /** The most tasks a workspace holds, whoever owns them (ADR 0079). */
  maxTasksPerWorkspace: number;
  /** The most tasks one person owns in a workspace (ADR 0079). */
  maxTasksPerOwner: number;
}

export const TASK_DEFAULTS: TaskSettings = {
  defaultTimeoutSeconds: 300,
  maxTimeoutSeconds: 3600,
  maxConcurrentRuns: 5,
  minIntervalSeconds: 60,
  idempotencyWindowHours: 24,
  runsKeptPerTask: 200,
  inlineResultBytes: 64 * 1024,
  maxTasksPerWorkspace: 200,
  maxTasksPerOwner: 50,
};

const whole = (minimum: number, maximum: number) => ({ type: "integer", minimum, maximum });

/** instance.json's `tasks` section. */
export const tasksConfig: ConfigSection<TaskSettings> = {
  schema: {
    type: "object",
    additionalProperties: false,
    properties: {
      defaultTimeoutSeconds: whole(1, 86_400),
      maxTimeoutSeconds: whole(1, 86_400),
      maxConcurrentRuns: whole(1, 100),
      minIntervalSeconds: whole(1, 86_400),
      idempotencyWindowHours: whole(1, 720),
      runsKeptPerTask: whole(1, 10_000),
      inlineResultBytes: whole(1024, 16 * 1024 * 1024),
      maxTasksPerWorkspace: whole(1, 100_000),
      maxTasksPerOwner: whole(1, 100_000),
    },
  },
  resolve(section) {
    const settings = { ...TASK_DEFAULTS, ...((section ?? {}) as Partial<TaskSettings>) };
    // Fields checked against each other: the schema alone cannot say it.
    if (settings.defaultTimeoutSeconds > settings.maxTimeoutSeconds) {
      throw new BootError(
        `instance.json: tasks.defaultTimeoutSeconds (${settings.defaultTimeoutSeconds}) is more than tasks.maxTimeoutSeconds (${settings.maxTimeoutSeconds}); lower the first or raise the second.`,
      );
    }
    if (settings.maxTasksPerOwner > settings.maxTasksPerWorkspace) {
      throw new BootError(
        `instance.json: tasks.maxTasksPerOwner (${settings.maxTasksPerOwner}) is more than tasks.maxTasksPerWorkspace (${settings.maxTasksPerWorkspace}); lower the first or raise the second.`,
      );
    }
    return settings;
  },
};
