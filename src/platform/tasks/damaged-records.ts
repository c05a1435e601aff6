import type { Logger } from "../../log.ts";
import { CorruptJson } from "../../storage/atomic.ts";

/** Which record a read met, of one owner in one workspace. */
export interface RecordRef {
  workspaceId: string;
  ownerId: string;
  id: string;
}

/** What `read` answers for a record that is there and does not parse. */
export const DAMAGED = Symbol("damaged record");

/**
 * Where a task's or a run's record that does not parse is met (a disk fault, an operator's edit):
 * one damaged file must not fail every tasks request of its workspace, nor keep a task from being
 * deleted. It is left out, and logged once per process by its path and where it stops being JSON,
 * never by its text (ADR 0076, 0143; test/integration/tasks-damaged.test.ts).
 */
export class DamagedRecords {
  private readonly logged = new Set<string>();

  constructor(
    private readonly kind: "task" | "task run",
    private readonly log: Logger,
  ) {}

  /** What `read` answers, or DAMAGED for a record that does not parse (logged); any other error is thrown on. */
  async read<T>(read: Promise<T>, record: RecordRef): Promise<T | typeof DAMAGED> {
    try {
      return await read;
    } catch (error) {
      if (!(error instanceof CorruptJson)) throw error;
      this.report(error, record);
      return DAMAGED;
    }
  }

  /** Logs a record that does not parse, once per file. */
  report(error: CorruptJson, record: RecordRef): void {
    if (this.logged.has(error.path)) return;
    this.logged.add(error.path);
    this.log.error(
      { ...record, path: error.path, reason: error.where },
      `${this.kind} left out of its workspace's tasks: its record is not valid JSON. Restore it from a backup, or move it out of the data root.`,
    );
  }
}
