import { Conflict } from "../../errors.ts";
import type { Logger } from "../../log.ts";
import { CorruptJson } from "../../storage/atomic.ts";
import { isObject } from "./definition.ts";
import { isTaskId } from "./model.ts";

/** Which record a read met, of one owner in one workspace: named by its place, not its text. */
export interface RecordRef {
  workspaceId: string;
  ownerId: string;
  id: string;
}

/**
 * A change refused because the task's stored record is damaged or cannot be read: written over,
 * what a restore could bring back would be lost, so nothing is written (ADR 0143's amendment of
 * 2026-12-07). Told to its owner, who can see that it is there (tasks.ts `get`).
 */
export class TaskRecordUnreadable extends Conflict {
  constructor(readonly taskId: string) {
    super(
      "task_record_unreadable",
      `Task ${taskId}'s stored record is damaged or cannot be read, so nothing was changed. An operator restores its file from a backup or fixes its fault (the server log names the file), or moves it out of the data root; the task is back as stored when its workspace is next loaded (after it idles, or at a restart).`,
    );
  }
}

/** What `read` answers for a record that is there and is damaged. */
export const DAMAGED = Symbol("damaged record");

/** What is wrong with a parsed record at its place (never its values), or undefined when it is one. */
export type ProblemOf = (value: unknown, place: RecordRef) => string | undefined;

/**
 * Where a task's or a run's damaged record is met (a disk fault, an operator's edit): one that
 * does not parse, or parses but is not a record of its place (problemOf). One damaged file must
 * not fail every tasks request of its workspace, nor keep a task from being deleted, nor stop the
 * instance's boot. It is left out (at boot: not armed), and logged once per process by its path
 * and where it stops being JSON or what is wrong, never by its text (ADR 0076, 0143, 0147;
 * test/integration/tasks-damaged.test.ts, tasks-boot-damaged.test.ts). A record that is there
 * but cannot be read is logged here too (`unreadable`), and left out only until it reads.
 */
export class DamagedRecords<T> {
  private readonly logged = new Set<string>();

  constructor(
    private readonly kind: "task" | "task run",
    private readonly log: Logger,
    private readonly problemOf: ProblemOf,
    /** The file a record is at; asked only of a record read there, so its segments were checked. */
    private readonly pathOf: (place: RecordRef) => string,
    /** When a record that cannot be read is read again, as its log line says. */
    private readonly readAgainWhen: string,
  ) {}

  /**
   * The record `read` answers: undefined when there is none, DAMAGED when it does not parse or is
   * not one (logged); any other error is thrown on.
   */
  async read(read: Promise<unknown>, place: RecordRef): Promise<T | undefined | typeof DAMAGED> {
    let value: unknown;
    try {
      value = await read;
    } catch (error) {
      if (!(error instanceof CorruptJson)) throw error;
      this.report(place, error.path, error.where);
      return DAMAGED;
    }
    if (value === undefined) return undefined;
    const problem = this.problemOf(value, place);
    if (problem === undefined) return value as T;
    this.report(place, this.pathOf(place), problem);
    return DAMAGED;
  }

  /**
   * Logs a record that is there but cannot be read (EIO, EACCES, EISDIR, EMFILE…), once per file:
   * unlike a damaged one it may read at the next try, so its reader leaves it out only for now
   * (a run: TaskStore.withRuns; a task: until its workspace's next load). The error names the
   * file and the fault, never its text.
   */
  unreadable(place: RecordRef, error: unknown): void {
    const path = this.pathOf(place);
    // Apart from a damaged one's: a record that reads later and proves damaged is logged as such.
    if (this.logged.has(`unreadable ${path}`)) return;
    this.logged.add(`unreadable ${path}`);
    this.log.error(
      { ...place, path, err: error },
      `${this.kind} left out for now: its record cannot be read (err says why). It is read again ${this.readAgainWhen}; fix the file's fault (permissions, disk) or move it out of the data root.`,
    );
  }

  /** Logs a read of a record that failed: one that does not parse as damaged, any other fault as unreadable. */
  readFailed(place: RecordRef, error: unknown): void {
    if (error instanceof CorruptJson) this.report(place, error.path, error.where);
    else this.unreadable(place, error);
  }

  /** Logs a damaged record, once per file. */
  private report(place: RecordRef, path: string, reason: string): void {
    if (this.logged.has(path)) return;
    this.logged.add(path);
    this.log.error(
      { ...place, path, reason },
      `${this.kind} left out of its workspace's tasks: its record is damaged (reason says how). Restore it from a backup, or move it out of the data root.`,
    );
  }
}

/**
 * What keeps a parsed record from being the task its place names. The path is authoritative
 * (CONTEXT.md, Primitive), and the store builds a task's paths from the ids it holds: a record
 * whose ids are not its place's (a file copied from another workspace or owner, or to another
 * name) would have its updates written, and its runs act, elsewhere. A createdAt that is not a
 * string would fail the sort of every listing of the workspace (tasks.ts list).
 */
export const taskProblem: ProblemOf = (value, place) => {
  const identity = identityProblem(value, place);
  if (identity) return identity;
  if (typeof (value as Record<string, unknown>).createdAt !== "string")
    return "its createdAt is not a string";
  return undefined;
};

/**
 * What keeps a parsed record from being a run of its place. Reading a workspace's runs looks at
 * each one's task id, start time and status (store.ts loadRuns, loaded.ts placeRuns): one that
 * lacks them would fail the read, every task's runs with it.
 */
export const runProblem: ProblemOf = (value, place) => {
  const identity = identityProblem(value, place);
  if (identity) return identity;
  const { taskId, startedAt, execution } = value as Record<string, unknown>;
  if (!isTaskId(taskId)) return "its taskId is not a task id";
  if (typeof startedAt !== "string") return "its startedAt is not a string";
  if (!isObject(execution)) return "its execution is not a JSON object";
  return undefined;
};

function identityProblem(value: unknown, place: RecordRef): string | undefined {
  if (!isObject(value)) return "it is not a JSON object";
  const { id, ownerId, workspaceId } = value;
  if (id !== place.id) return "its id is not its file's name";
  if (ownerId !== place.ownerId) return "its ownerId is not the owner folder it is in";
  if (workspaceId !== place.workspaceId) return "its workspaceId is not the workspace it is in";
  return undefined;
}
