import { Conflict, Forbidden, InvalidInput, NotFound } from "../../errors.ts";
import type { UserDirectory } from "../../identity/users.ts";
import type { Clock } from "../../kernel/clock.ts";
import type { AccessCheck } from "../../workspace/access-check.ts";
import type { WorkspaceStore } from "../../workspace/store.ts";
import type { TaskSettings } from "./config.ts";
import { TaskRecordUnreadable } from "./damaged-records.ts";
import { type Definer, defineTask, isObject, redefineTask } from "./definition.ts";
import { bodyDigest, checkIdempotencyKey } from "./idempotency.ts";
import { isFinished, isRunId, newTaskId, type Run, type Task } from "./model.ts";
import type { ResultFiles } from "./result-files.ts";
import type { TaskRunner } from "./runner.ts";
import type { TaskSchedules } from "./schedule.ts";
import type { StoredTasks, TaskStore } from "./store.ts";

export const DEFAULT_RUNS_PAGE = 20;
/** What a task's runs do as its owner: changed by the owner alone (ADR 0044, 0086). */
const OWNERS_FIELDS = ["action", "inputSchema"] as const;
export const MAX_RUNS_PAGE = 100;

/** What starting a run may say: an input, the run it retries, an idempotency key. */
export interface RunRequest {
  input?: unknown;
  retryOf?: unknown;
  idempotencyKey?: string | undefined;
}

/**
 * A member who changes tasks: a task's create, update and delete, and a run's start, ask `access`
 * (the caller's, built by the dispatch or the workspace gate) just before their write is seen, so
 * one whose access ended meanwhile does not land (adr/0154).
 */
export interface Asker extends Definer {
  access: AccessCheck;
}

export interface RunPage {
  runs: Run[];
  nextCursor?: string;
}

// One answer for "no such task" and "a task you may not see": a private task is invisible to
// every other member (test/integration/tasks.test.ts "a private task is invisible").
const noTask = () =>
  new NotFound("task_not_found", "No task with that id in this workspace that you can see.");
const notChangeable = () =>
  new Forbidden("Only the task's owner or a workspace admin changes a shared task.");
const noRun = () => new NotFound("run_not_found", "No run with that id in this workspace that you can see.");
/** What a bound's refusal adds when some of the tasks it counts cannot be read. */
const damagedOf = (count: number) =>
  count === 0
    ? ""
    : ` (${count} of them stored with a damaged record, listed nowhere until an operator restores or removes it)`;
/**
 * What a workspace admin is refused of a private task whose owner is no longer an active member:
 * they see it only so that it can be stopped, and everything else stays the owner's (ADR 0130).
 */
const onlyStop = (refused: string) =>
  new Forbidden(
    `This private task's owner is no longer an active member; ${refused} is theirs alone. A workspace admin may only stop it: delete it (which cancels its runs in flight), or remove its trigger with {"trigger": null}.`,
  );

/**
 * The tasks of a workspace as one member sees and changes them; the tools and the REST routes
 * both call this, so the two cannot disagree. A task is its owner's alone unless shared: then
 * every member sees and runs it, and only its owner and workspace admins change it. Its action
 * and input schema are changed by its owner alone, since every run acts as the owner. A private
 * task whose owner is no longer an active member is shown to admins only so they can stop it.
 */
export class Tasks {
  constructor(
    private readonly store: TaskStore,
    private readonly runner: TaskRunner,
    private readonly results: Pick<ResultFiles, "shown">,
    private readonly schedules: TaskSchedules,
    private readonly workspaces: Pick<WorkspaceStore, "roleOf">,
    private readonly users: Pick<UserDirectory, "isDeactivated">,
    private readonly settings: TaskSettings,
    private readonly clock: Clock,
  ) {}

  /** The tasks the member can see, newest first. */
  async list(asker: Definer): Promise<Task[]> {
    return (await this.store.all(asker.workspaceId))
      .filter((task) => this.canSee(task, asker))
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  }

  /**
   * The task, if the member can see it. One the load left out (its record damaged or unreadable)
   * is told to its owner, the folder it is in, as such (409 task_record_unreadable, saying what to
   * do), and to anyone else as no task: whether it is shared cannot be read.
   */
  async get(asker: Definer, id: unknown): Promise<Task> {
    if (typeof id !== "string") throw noTask();
    const task = await this.store.taskIn(asker.workspaceId, id);
    if (task && this.canSee(task, asker)) return task;
    if (!task && (await this.store.leftOut(asker.workspaceId, id))?.ownerId === asker.principalId)
      throw new TaskRecordUnreadable(id);
    throw noTask();
  }

  async create(asker: Asker, body: Record<string, unknown>): Promise<Task> {
    const task = defineTask(body, asker, this.settings, { id: newTaskId(), now: this.now() });
    await this.store.create(task, asker.access, (existing) => this.admit(existing, asker));
    this.schedules.arm(task);
    return task;
  }

  async update(asker: Asker, id: unknown, body: Record<string, unknown>): Promise<Task> {
    const task = await this.get(asker, id);
    // Checked once here so a bad change writes nothing, and again on the reread record: who may
    // change what is decided by the task as it is written over (its owner may be back by then).
    this.checkChange(task, asker, body);
    redefineTask(task, body, asker, this.settings, this.now());
    // Armed as each write commits, so of two updates at once the job follows the later.
    const next = await this.store.update(
      task,
      (current) => {
        this.checkChange(current, asker, body);
        return redefineTask(current, body, asker, this.settings, this.now());
      },
      asker.access,
      (written) => {
        if ("trigger" in body) this.schedules.arm(written);
      },
    );
    if (!next) throw noTask();
    return next;
  }

  /**
   * Removes the task and its runs. The task is gone before its runs are looked at, so no start
   * (manual or scheduled) begins after; a run in flight, one started just before included, is
   * cancelled and recorded before its record and result file are removed.
   */
  async delete(asker: Asker, id: unknown): Promise<void> {
    const task = await this.get(asker, id);
    // Checked once here so a refused delete waits for nothing, and again on the task reread under
    // its lock: an owner back meanwhile, or a shared task made private while the delete waited,
    // is no longer the asker's to delete (tasks.test.ts "an admin's delete").
    this.checkDelete(task, asker);
    const removed = await this.store.delete(
      task,
      (current) => this.checkDelete(current, asker),
      asker.access,
      async (runIds) => {
        this.schedules.disarm(task);
        for (const runId of runIds) {
          if (this.runner.cancel(runId)) await this.runner.settled(runId);
        }
      },
    );
    if (!removed) throw noTask();
  }

  /** Starts a run; `replayed` when an idempotency key had already started it. */
  async run(asker: Asker, id: unknown, request: RunRequest): Promise<{ run: Run; replayed: boolean }> {
    const task = await this.get(asker, id);
    this.checkStart(task, asker);
    const input = request.input ?? undefined;
    if (input !== undefined && !isObject(input)) throw new InvalidInput('"input" is a JSON object.');
    // A retryOf that is not a run id is the caller's mistake to be told of, not a missing run
    // (test/integration/tasks-retry-of.test.ts).
    if (request.retryOf !== undefined && !isRunId(request.retryOf))
      throw new InvalidInput('"retryOf" is a run id, run_ followed by 24 hex digits.');
    const retried = request.retryOf === undefined ? undefined : await this.getRun(asker, request.retryOf);
    if (retried && retried.taskId !== task.id)
      throw new InvalidInput('"retryOf" names a run of another task.');
    const runInput = input ?? retried?.input ?? {};
    // Started from the task as it is when the run is recorded, and never once a delete began; by
    // someone who may start it then: a task made private meanwhile is its owner's alone
    // (test/unit/platform/tasks/tasks.test.ts "a member's run of a shared task").
    const start = async (idempotency?: Run["idempotency"]) => {
      const run = await this.store.whileExists(task, async (current) => {
        this.checkStart(current, asker);
        return this.runner.start(current, {
          trigger: retried ? "retry" : "manual",
          startedBy: asker.principalId,
          input: runInput,
          ...(retried ? { retryOf: retried.id } : {}),
          ...(idempotency ? { idempotency } : {}),
          access: asker.access,
        });
      });
      if (!run) throw noTask();
      return run;
    };
    if (request.idempotencyKey === undefined) return { run: await start(), replayed: false };
    const key = checkIdempotencyKey(request.idempotencyKey);
    // Of the run it would start, so `{}` and `{"input": {}}` are one request.
    const digest = bodyDigest({ input: runInput, retryOf: request.retryOf });
    const scope = { taskId: task.id, principalId: asker.principalId };
    // The keys are the workspace's, held loaded until the start is written (ADR 0056).
    const keyed = await this.store.withKeys(task.workspaceId, (keys) =>
      keys.once(scope, key, digest, (expiresAtMs) =>
        start({ key, bodyDigest: digest, expiresAt: new Date(expiresAtMs).toISOString() }),
      ),
    );
    if ("started" in keyed) return { run: keyed.started, replayed: false };
    // A replay answers the run as it is now, read by the id the key kept. A removed run takes its
    // key with it, so only a run removed this very moment is not found.
    const now = await this.readRun(task.workspaceId, keyed.replayOf);
    if (!now) throw noRun();
    return { run: await this.results.shown(now), replayed: true };
  }

  /** The task's runs, newest first, a page at a time; `cursor` is the last run id of the previous page. */
  async runs(
    asker: Definer,
    id: unknown,
    page: { cursor?: string | undefined; limit?: number | undefined },
  ): Promise<RunPage> {
    const task = await this.get(asker, id);
    if (this.heldForDepartedOwner(task, asker)) throw onlyStop("reading its runs");
    const ids = await this.store.runIds(task);
    let from = 0;
    if (page.cursor !== undefined) {
      const at = ids.indexOf(page.cursor);
      if (at < 0)
        throw new InvalidInput(
          "That cursor is not one this list gave, or its run is gone: list from the start.",
        );
      from = at + 1;
    }
    const limit = page.limit ?? DEFAULT_RUNS_PAGE;
    const slice = ids.slice(from, from + limit);
    const runs = await this.readRuns(task, slice);
    const last = slice.at(-1);
    return from + limit < ids.length && last ? { runs, nextCursor: last } : { runs };
  }

  async getRun(asker: Definer, runId: unknown): Promise<Run> {
    const run = isRunId(runId) ? await this.readRun(asker.workspaceId, runId) : undefined;
    const task = run && (await this.store.taskIn(run.workspaceId, run.taskId));
    if (!run || !task || !this.canSee(task, asker)) throw noRun();
    // A run holds what the task read and was given as its owner (their files, their `my_`
    // sources), which no admin reads (tasks.test.ts "an admin may only stop").
    if (this.heldForDepartedOwner(task, asker)) throw onlyStop("reading its runs");
    return this.results.shown(run);
  }

  /** Cancels a run in flight: its owner's task's owner, a workspace admin or who started it may. */
  async cancelRun(asker: Definer, runId: unknown): Promise<Run> {
    const run = await this.getRun(asker, runId);
    const task = await this.get(asker, run.taskId);
    if (!this.mayChange(task, asker) && run.startedBy !== asker.principalId) {
      throw new Forbidden("Only the task's owner, a workspace admin or who started the run may cancel it.");
    }
    if (isFinished(run) || !this.runner.cancel(run.id)) {
      throw new InvalidInput(`The run has already ended (${run.execution.status}).`);
    }
    await this.runner.ended(run.id);
    return this.results.shown((await this.readRun(run.workspaceId, run.id)) ?? run);
  }

  /**
   * A run of this workspace as it is now: its record, or how it ended while its record's write is
   * under way or tried again (TaskRunner.endedRun), so no read answers `running` after the call ended.
   */
  private async readRun(workspaceId: string, runId: string): Promise<Run | undefined> {
    const run = await this.store.run(workspaceId, runId);
    return run && (this.runner.endedRun(runId) ?? run);
  }

  private async readRuns(task: Task, ids: string[]): Promise<Run[]> {
    const runs = await Promise.all(ids.map((runId) => this.readRun(task.workspaceId, runId)));
    return Promise.all(
      runs.filter((run): run is Run => run !== undefined).map((run) => this.results.shown(run)),
    );
  }

  /**
   * A workspace holds at most `tasks.maxTasksPerWorkspace` tasks, and one person owns at most
   * `tasks.maxTasksPerOwner` of them, so no member can fill it alone: every task may be armed to
   * fire once per `tasks.minIntervalSeconds`, and keeps runs and their result files (ADR 0079).
   */
  /**
   * Refuses a create past the workspace's or the asker's bound (ADR 0079). A task whose record is
   * damaged counts: it is stored, and restoring it would take the workspace past its bound
   * (test/integration/tasks-damaged.test.ts "counted against the bounds").
   */
  private admit({ tasks, unreadable }: StoredTasks, asker: Definer): void {
    const { maxTasksPerWorkspace, maxTasksPerOwner } = this.settings;
    const stored = tasks.length + unreadable.length;
    if (stored >= maxTasksPerWorkspace) {
      throw new Conflict(
        "too_many_tasks",
        `This workspace already has ${stored} tasks${damagedOf(unreadable.length)}, its limit (tasks.maxTasksPerWorkspace is ${maxTasksPerWorkspace}): delete one to define another.`,
      );
    }
    const mine = (task: { ownerId: string }) => task.ownerId === asker.principalId;
    const ownedUnreadable = unreadable.filter(mine).length;
    const owned = tasks.filter(mine).length + ownedUnreadable;
    if (owned >= maxTasksPerOwner) {
      throw new Conflict(
        "too_many_tasks",
        `You already own ${owned} tasks in this workspace${damagedOf(ownedUnreadable)}, the most one person may (tasks.maxTasksPerOwner is ${maxTasksPerOwner}): delete one to define another.`,
      );
    }
  }

  /**
   * Throws unless `asker` may delete `task` as it is: one they see and may change. An admin may
   * delete a departed owner's private task, since that stops it (ADR 0130).
   */
  private checkDelete(task: Task, asker: Definer): void {
    if (!this.canSee(task, asker)) throw noTask();
    if (!this.mayChange(task, asker)) throw notChangeable();
  }

  /** Throws unless `asker` may start a run of `task` as it is. */
  private checkStart(task: Task, asker: Definer): void {
    if (!this.canSee(task, asker)) throw noTask();
    // A run acts as the owner: one an admin started would, the moment the owner is back.
    if (this.heldForDepartedOwner(task, asker)) throw onlyStop("starting its runs");
  }

  /** Throws unless `asker` may make this change of `task` as it is. */
  private checkChange(task: Task, asker: Definer, body: Record<string, unknown>): void {
    if (!this.canSee(task, asker)) throw noTask();
    if (!this.mayChange(task, asker)) throw notChangeable();
    if (asker.principalId === task.ownerId) return;
    const given = Object.keys(body).filter((field) => body[field] !== undefined);
    if (this.heldForDepartedOwner(task, asker)) {
      // Removing the trigger is all that stopping it takes short of a delete. A new trigger would
      // fire as the owner on the admin's schedule once they are back, and sharing it would show its
      // runs, and let every member start them, as the owner (tasks.test.ts "an admin may only stop").
      const refused = given.filter((field) => !(field === "trigger" && body.trigger === null));
      if (refused.length > 0) throw onlyStop(`changing its ${refused.join(", ")}`);
      return;
    }
    // The input schema says what a run may merge over the action's arguments, so it chooses what
    // the owner's action receives as much as the action does: an admin who loosened it could have
    // a shared task read the owner's private files (ADR 0086; tasks.test.ts "only its owner").
    const ownersOnly = OWNERS_FIELDS.filter((field) => given.includes(field));
    if (ownersOnly.length > 0) {
      throw new Forbidden(
        `Only the task's owner changes its ${ownersOnly.join(" or ")}: every run acts as the owner, with its input merged over the action's arguments. An admin may change its other fields or delete it.`,
      );
    }
  }

  private mayChange(task: Task, asker: Definer): boolean {
    return (
      task.ownerId === asker.principalId ||
      this.workspaces.roleOf(asker.workspaceId, asker.principalId) === "admin"
    );
  }

  /**
   * Its owner's own and every shared task; to a workspace admin also the private tasks of an owner
   * who is no longer an active member here (removed or deactivated), so that their schedules can
   * be stopped: nobody else could ever reach them, and the inbox tells admins to act. Stopping them
   * is all an admin may do (heldForDepartedOwner).
   */
  private canSee(task: Task, asker: Definer): boolean {
    if (task.ownerId === asker.principalId || task.visibility === "shared") return true;
    const ownerActive =
      this.workspaces.roleOf(task.workspaceId, task.ownerId) !== undefined &&
      !this.users.isDeactivated(task.ownerId);
    return !ownerActive && this.workspaces.roleOf(asker.workspaceId, asker.principalId) === "admin";
  }

  /**
   * A private task seen by someone else: only a workspace admin, and only while its owner is not
   * an active member (canSee). They may stop it, nothing more (ADR 0130).
   */
  private heldForDepartedOwner(task: Task, asker: Definer): boolean {
    return task.visibility === "private" && task.ownerId !== asker.principalId;
  }

  private now(): string {
    return new Date(this.clock()).toISOString();
  }
}
