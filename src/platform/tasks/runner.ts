import type { CallToolResult } from "@modelcontextprotocol/client";
import { Conflict } from "../../errors.ts";
import type { UserDirectory } from "../../identity/users.ts";
import type { Clock } from "../../kernel/clock.ts";
import type { EventPublisher } from "../../kernel/events.ts";
import type { Timers } from "../../kernel/timers.ts";
import type { Logger } from "../../log.ts";
import type { HeldCall, ToolDispatch } from "../../sources/dispatch.ts";
import type { AccessCheck } from "../../workspace/access-check.ts";
import type { WorkspaceStore } from "../../workspace/store.ts";
import { untilAborted } from "../until-aborted.ts";
import { callAsOwner, ownerRefusal } from "./action-call.ts";
import type { TaskSettings } from "./config.ts";
import { abortFlight, type Flight, newFlight } from "./flight.ts";
import type { Unfinished } from "./loaded.ts";
import { isFinished, newRunId, type Run, type RunTrigger, type Task } from "./model.ts";
import { ABORTED, failedOutcome, type Outcome, outcomeOf } from "./outcome.ts";
import type { ResultFiles } from "./result-files.ts";
import { type RunEnd, RunEndWriter } from "./run-end-writer.ts";
import { announceRun } from "./run-events.ts";
import { checkInput } from "./run-input.ts";
import { RunSlots } from "./run-slots.ts";
import type { TaskStore } from "./store.ts";

export interface RunnerDeps {
  store: TaskStore;
  dispatch: ToolDispatch;
  /** Where a large result is kept: a file of the owner's. */
  results: Pick<ResultFiles, "keep">;
  workspaces: Pick<WorkspaceStore, "roleOf">;
  users: Pick<UserDirectory, "isDeactivated">;
  events: EventPublisher;
  clock: Clock;
  timers: Timers;
  settings: TaskSettings;
  log: Logger;
}

/** What starts a run, besides its task. */
export interface RunStart {
  trigger: RunTrigger;
  startedBy: string;
  input: Record<string, unknown>;
  scheduledFor?: string;
  missedSince?: string;
  retryOf?: string;
  idempotency?: Run["idempotency"];
  /**
   * Asked just before the run's record is created, which is what starts it: a member's start is
   * refused there once their access has ended (adr/0154). Not the run's tool call, whose caller
   * the dispatch builds as the task's owner.
   */
  access: AccessCheck;
}

/** A task's tool calls may not be more at once than its limit (ADR 0106): refused by name, never queued. */
export class ConcurrencyLimit extends Conflict {
  constructor(limit: number) {
    super(
      "concurrency_limit",
      `This task already has ${limit} call(s) of its tool going, its limit (a run that timed out, was cancelled or was cut by its owner's loss of access holds its place until its call ends, at most a minute): wait for one to end, or raise limits.maxConcurrentRuns.`,
    );
  }
}

/** A run is not started once a stop has begun: refused by name, so a schedule can put its instant back. */
export class Stopping extends Conflict {
  constructor() {
    super("stopping", "Atrium is stopping: start the run again once it is back.");
  }
}

/**
 * Runs tasks: each run is the task's action called through the one dispatch as the task's owner
 * (membership now, the scopes of the credential that defined the task, then the router), so
 * unattended work meets the wall exactly as the person's own call would. A run is recorded
 * `running` before the call and rewritten once when it ends (tried again while that write fails,
 * the end answered from memory meanwhile); execution (did the call end, and
 * how) and assessment (did its output meet the output schema) are kept apart. The in-flight runs
 * live in this process: a concurrency limit counts them whatever started them (and a call still
 * ending after its run's timeout or cancel, or its owner's loss of access, up to a minute), a timeout or a
 * cancel aborts the call (the source tells its server), and a graceful stop records them
 * `interrupted`; a crash leaves them `running` on disk, and the next boot records that.
 */
export class TaskRunner {
  private readonly flights = new Map<string, Flight>();
  private readonly slots: RunSlots;
  private stopping = false;
  private readonly ends: RunEndWriter;

  constructor(private readonly deps: RunnerDeps) {
    this.slots = new RunSlots(deps.timers, deps.log);
    this.ends = new RunEndWriter(deps.store, deps.timers, deps.log);
  }

  /** How many of the task's slots are held now: its runs in flight, and calls still ending after theirs did. */
  inFlight(taskId: string): number {
    return this.slots.count(taskId);
  }

  /**
   * Records a new run and starts its call; returns the run as recorded (`running`). Refused,
   * recording nothing, when the input does not fit the task or its runs are at their limit.
   */
  async start(task: Task, start: RunStart): Promise<Run> {
    if (this.stopping) throw new Stopping();
    checkInput(task, start.input);
    // Counted and taken before the first await, so two starts racing for the last slot cannot both win.
    if (this.inFlight(task.id) >= task.limits.maxConcurrentRuns) {
      throw new ConcurrencyLimit(task.limits.maxConcurrentRuns);
    }
    const id = newRunId();
    const flight = newFlight(task.id);
    this.flights.set(id, flight);
    this.slots.take(id, task.id);
    const run: Omit<Run, "sequence"> = {
      id,
      taskId: task.id,
      workspaceId: task.workspaceId,
      ownerId: task.ownerId,
      trigger: start.trigger,
      ...(start.scheduledFor === undefined ? {} : { scheduledFor: start.scheduledFor }),
      ...(start.missedSince === undefined ? {} : { missedSince: start.missedSince }),
      ...(start.retryOf === undefined ? {} : { retryOf: start.retryOf }),
      startedBy: start.startedBy,
      input: start.input,
      startedAt: this.now(),
      execution: { status: "running" },
      assessment: { status: "not_assessed" },
      ...(start.idempotency === undefined ? {} : { idempotency: start.idempotency }),
    };
    const recorded = this.deps.store.createRun(run, start.access);
    // Set before the first await, so a stop that begins while the run is being recorded waits for
    // its end too (runner.test.ts "a run whose start races a graceful stop").
    flight.done = recorded.then(
      (written) => {
        announceRun(this.deps.events, "task.run.started", task, written);
        return this.execute(task, written, flight);
      },
      () => undefined,
    );
    try {
      return await recorded;
    } catch (error) {
      this.flights.delete(id);
      this.slots.release(id);
      throw error;
    }
  }

  /** Aborts a run in flight; false when it is not in flight here (it has ended). */
  cancel(runId: string): boolean {
    const flight = this.flights.get(runId);
    if (!flight) return false;
    abortFlight(flight, "cancel");
    return true;
  }

  /** Resolves once the run (if in flight) is recorded as ended. */
  async settled(runId: string): Promise<void> {
    await this.flights.get(runId)?.done;
  }

  /**
   * Resolves once the run's end is known: written, or answered from memory while its write is tried
   * again (ADR 0105). A cancel waits for this, not for the write, which a full disk may hold back
   * for as long as it is full (runner.test.ts "a cancel while the end cannot be written").
   */
  async ended(runId: string): Promise<void> {
    const flight = this.flights.get(runId);
    if (flight) await Promise.race([flight.done, flight.known]);
  }

  /**
   * The run as it ended while its record still says `running` because the write failed and waits
   * to be tried again: what a read answers, so no run is answered `running` once its call has ended
   * and its end is known. Undefined when the record is the run as it is.
   */
  endedRun(runId: string): Run | undefined {
    return this.flights.get(runId)?.unwritten;
  }

  /**
   * A graceful stop: every run in flight is aborted and recorded `interrupted`, and a run's end
   * waiting to be written is tried once more. Answers the workspaces with a run whose end could
   * still not be written: their crash marks are to stay, so the next boot records those runs
   * `interrupted`, as it does a crash's (runner.test.ts "a stop gives up on it").
   */
  async stop(): Promise<ReadonlySet<string>> {
    this.stopping = true;
    this.ends.stop();
    const flights = [...this.flights.values()];
    for (const flight of flights) abortFlight(flight, "shutdown");
    await Promise.all(flights.map((flight) => flight.done));
    return this.ends.unrecorded;
  }

  /**
   * Runs a crash left `running` (found when their workspace is loaded, at boot for a workspace
   * the crash left marked, else on its first use) are recorded `interrupted`, never left running.
   * A run in flight here is not a crash's; one that ended since it was read is left as it ended.
   * Answers the runs it recorded: a crash may have written their result file and not named it.
   */
  async interruptLeftovers(found: readonly Unfinished[]): Promise<Run[]> {
    const error = {
      code: "interrupted",
      message: "Atrium stopped while this run was in flight; it was found unfinished at the next start.",
    };
    const interruptedRuns: Run[] = [];
    for (const { run, task } of found) {
      if (this.flights.has(run.id)) continue;
      let interrupted = false;
      const ended = await this.deps.store.updateRun(run, (current) => {
        if (isFinished(current)) return current;
        interrupted = true;
        return { ...current, endedAt: this.now(), execution: { status: "interrupted", error } };
      });
      if (interrupted && ended) {
        announceRun(this.deps.events, "task.run.finished", task, ended);
        interruptedRuns.push(ended);
      }
    }
    return interruptedRuns;
  }

  private async execute(task: Task, run: Run, flight: Flight): Promise<void> {
    const cancelTimeout = this.deps.timers.after(task.limits.timeoutSeconds * 1000, () =>
      abortFlight(flight, "timeout"),
    );
    let outcome: Outcome;
    let result: CallToolResult | undefined;
    let call: HeldCall | undefined;
    try {
      const refusal = ownerRefusal(this.deps.users, task);
      if (flight.reason) {
        // Aborted while its record was being written (a stop, a cancel): its tool is never called.
        outcome = ABORTED[flight.reason];
      } else if (refusal) {
        outcome = { execution: "failed", error: refusal };
      } else {
        // Raced against the run's own abort: a source that ignores the signal (a platform tool)
        // must not hold the run past its timeout; its slot is another matter (RunSlots).
        const { signal } = flight.controller;
        call = callAsOwner(this.deps.dispatch, task, run, signal);
        result = await untilAborted(call, signal);
        outcome = flight.reason ? ABORTED[flight.reason] : outcomeOf(task, result);
      }
    } catch (error) {
      outcome = flight.reason ? ABORTED[flight.reason] : failedOutcome(run, error, this.deps.log);
    } finally {
      cancelTimeout();
    }
    // A client that reads the run as ended may start the next at once, before the end is
    // recorded. A call that gave no answer (the run's timeout or cancel, or its owner's access
    // ended) keeps its slot until its tool has ended, which one that ignores its signal has not
    // (RunSlots, ADR 0106): a reactivated owner's next run must not overlap it either.
    if (call && result === undefined) {
      const holder = {
        runId: run.id,
        taskId: task.id,
        workspaceId: task.workspaceId,
        tool: task.action.tool,
      };
      this.slots.releaseWhenSettled(holder, call.toolSettled);
    } else this.slots.release(run.id);
    const kept = !flight.reason && result ? await this.keep(run, result) : undefined;
    const end: RunEnd = {
      endedAt: this.now(),
      execution: outcome.error
        ? { status: outcome.execution, error: outcome.error }
        : { status: outcome.execution },
      assessment: outcome.assessment ?? { status: "not_assessed" },
      ...kept,
    };
    try {
      const ended = await this.ends.write(task, run, end, (unwritten) => {
        flight.unwritten = unwritten;
        flight.endKnown();
      });
      flight.endWritten = ended !== undefined;
      if (ended) announceRun(this.deps.events, "task.run.finished", await this.asItIsNow(task), ended);
      await this.pruneRuns(task, run);
    } catch (error) {
      this.deps.log.error(
        { err: error, runId: run.id, taskId: task.id },
        "a run's end could not be announced, the task's older runs pruned or its lastSequence raised",
      );
    } finally {
      this.flights.delete(run.id);
    }
  }

  /**
   * The result as the run keeps it. Nothing it throws may escape: a run's end is written after it,
   * and a rejection nobody awaits would end the process (runner.test.ts "a result that cannot be
   * kept").
   */
  private async keep(
    run: Run,
    result: CallToolResult,
  ): Promise<Pick<Run, "result" | "resultFile" | "resultNote">> {
    try {
      return await this.deps.results.keep(run, result);
    } catch (error) {
      this.deps.log.error({ err: error, runId: run.id }, "task run's result could not be kept");
      return { resultNote: `The result could not be kept; it is logged under ${run.id}.` };
    }
  }

  /**
   * Keeps the task's newest finished runs up to the configured number; the rest go with their result
   * files. A run still going is neither counted nor pruned, and one whose end is on disk counts
   * though its flight has not yet left: two runs ending together each see the other's end, so the
   * later prune takes what both leave past the limit. The run that just ended (`ended`) is never
   * taken: numbered below the runs kept (its task's record restored from a backup), it was pruned
   * as the oldest as it ended, result and all; it is kept, then renumbered past the runs kept and
   * the task's `lastSequence` raised with it (TaskStore.raiseSequence, ADR 0171's amendment), so
   * neither the next run nor it is taken as the oldest at the next run's end.
   */
  private async pruneRuns(task: Task, ended: Run): Promise<void> {
    const ids = await this.deps.store.runIds(task);
    const finished = ids.filter((id) => {
      const flight = this.flights.get(id);
      return flight === undefined || flight.endWritten === true;
    });
    const excess = finished.slice(this.deps.settings.runsKeptPerTask).filter((id) => id !== ended.id);
    if (excess.length > 0) await this.deps.store.forgetRuns(task, excess);
    await this.deps.store.raiseSequence(task, ended);
  }

  /**
   * The task as it is when its run ends, whom the end is announced to: one made private while the
   * run went tells its owner alone, not every member as its start did (tasks.test.ts "a run's end
   * is announced"); one deleted meanwhile, its owner alone too (runner.test.ts "deleted").
   */
  private async asItIsNow(task: Task): Promise<Task> {
    const current = await this.deps.store.taskIn(task.workspaceId, task.id);
    return current ?? { ...task, visibility: "private" };
  }

  private now(): string {
    return new Date(this.deps.clock()).toISOString();
  }
}
