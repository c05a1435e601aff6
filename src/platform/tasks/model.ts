import { randomBytes } from "node:crypto";
import type { CallToolResult } from "@modelcontextprotocol/client";

/** What a run does: one tool, called through the router as the task's owner. */
export interface TaskAction {
  tool: string;
  arguments: Record<string, unknown>;
}

/** When a task runs by itself: a cron expression read in a time zone, or every so many seconds. */
export type TaskTrigger = { cron: string; timezone: string } | { everySeconds: number };

export interface TaskLimits {
  timeoutSeconds: number;
  maxConcurrentRuns: number;
}

export type Visibility = "private" | "shared";

/** A task as stored at `<ws>/tasks/<owner>/tsk_….json` and as answered. */
export interface Task {
  id: string;
  workspaceId: string;
  ownerId: string;
  name: string;
  description: string;
  action: TaskAction;
  inputSchema?: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  limits: TaskLimits;
  trigger?: TaskTrigger;
  visibility: Visibility;
  /**
   * The scopes of the credential that last defined the task, when it was scoped: its runs are
   * refused what that credential would be (absent: a session, which is not scoped).
   */
  scopes?: string[];
  createdAt: string;
  updatedAt: string;
  /**
   * The last schedule instant the scheduler acted on, or when the trigger was set: every instant
   * up to here is accounted for, and a restart catches up from here.
   */
  lastScheduledAt?: string;
  /**
   * Set by the first schedule that found the owner gone (left, or deactivated): that run was
   * recorded failed and the workspace told; later schedules are skipped until the owner is back.
   */
  ownerInactiveSince?: string;
  /**
   * The highest `sequence` a run of the task has been given, written before that run's record
   * (a start that fails after leaves a gap): a start numbers its run from here, without reading
   * every run of the workspace (ADR 0171). 0 on a new task; absent on one defined before
   * 2026-12-07, whose first start takes it from its runs. Below its runs' (the record restored from
   * a backup), a run's end raises it, past its own run renumbered when that is below the others
   * (ADR 0171's amendment).
   */
  lastSequence?: number;
}

export type RunTrigger = "manual" | "schedule" | "retry";
export type Execution = "running" | "succeeded" | "failed" | "timed_out" | "cancelled" | "interrupted";
export type Assessment = "accepted" | "rejected" | "not_assessed";

/** Why a run did not run or did not finish, in words for the person and a code for a program. */
export interface RunError {
  code: string;
  message: string;
  /**
   * Set when the refusal is about the task's owner, not the call: they left the workspace
   * (`owner_not_member`) or were deactivated (`owner_deactivated`). A task runs as its owner.
   */
  reason?: "owner_not_member" | "owner_deactivated";
}

/** A run as stored at `<ws>/tasks/<owner>/runs/run_….json` and as answered. */
export interface Run {
  id: string;
  taskId: string;
  workspaceId: string;
  ownerId: string;
  trigger: RunTrigger;
  /** The schedule instant a `schedule` run stands for (the latest one missed, after a restart). */
  scheduledFor?: string;
  /** Set when the run stands for schedules missed while Atrium was down: the first of them. */
  missedSince?: string;
  /** The run this one retries. */
  retryOf?: string;
  /** Who started it: a member for a manual run or a retry; the owner for a schedule. */
  startedBy: string;
  input: Record<string, unknown>;
  startedAt: string;
  /**
   * The run's place among its task's runs, counting up: a run started later has a higher one. It,
   * not `startedAt`, orders the runs (newest first) and decides which `runsKeptPerTask` keeps: a
   * wall clock stepped back makes a later run's `startedAt` the earlier. Absent on a run recorded
   * before 2026-12-07, which counts as older than every run that has one.
   */
  sequence?: number;
  endedAt?: string;
  /** Whether the tool call ran to its end: the execution's own answer, never the assessment's. */
  execution: { status: Execution; error?: RunError };
  /** Whether the output met the task's output schema; only a `succeeded` run is assessed. */
  assessment: { status: Assessment; errors?: string[] };
  /** The tool's result, when it is small enough to keep in the record. */
  result?: CallToolResult;
  /** The tool's result stored as a file in the owner's files, when it was too large to inline. */
  resultFile?: { id: string; size: number };
  /** Why there is neither: the result was too large to keep and could not be stored as a file. */
  resultNote?: string;
  /** The key and body digest of an idempotent start; the key is honoured until `expiresAt`. */
  idempotency?: { key: string; bodyDigest: string; expiresAt: string };
}

export const TASK_ID = /^tsk_[0-9a-f]{24}$/;
export const RUN_ID = /^run_[0-9a-f]{24}$/;

export function newTaskId(): string {
  return `tsk_${randomBytes(12).toString("hex")}`;
}

export function newRunId(): string {
  return `run_${randomBytes(12).toString("hex")}`;
}

export function isTaskId(value: unknown): value is string {
  return typeof value === "string" && TASK_ID.test(value);
}

export function isRunId(value: unknown): value is string {
  return typeof value === "string" && RUN_ID.test(value);
}

/** Whether a run has ended: every status but `running` is final. */
export function isFinished(run: Pick<Run, "execution">): boolean {
  return run.execution.status !== "running";
}
