import type { Timers } from "../../kernel/timers.ts";
import type { Logger } from "../../log.ts";
import type { Run, Task } from "./model.ts";
import type { TaskStore } from "./store.ts";

/**
 * A failed write of a run's end (a full disk) is tried again after this, doubled at each failure
 * up to RETRY_MAX_MS, for as long as it fails and Atrium runs.
 */
const RETRY_FIRST_MS = 500;
const RETRY_MAX_MS = 60_000;

/** What a run's record gains when it ends. */
export type RunEnd = Pick<
  Run,
  "endedAt" | "execution" | "assessment" | "result" | "resultFile" | "resultNote"
>;

/**
 * Writes runs' ends, and while a write fails (a full disk) tries it again with backoff, so a run is
 * never left answered `running` until an eviction or a restart (ADR 0105; runner.test.ts "a run
 * whose end cannot be written"). A stop tries each once more and then gives up: the workspace keeps
 * its crash mark (`unrecorded`), and the next boot records the run `interrupted`, as a crash's. The
 * first failure and the giving up are logged as errors with the run's ids and how it ended, never
 * its input or result.
 */
export class RunEndWriter {
  /** The workspaces with a run whose end a stop gave up writing. */
  readonly unrecorded = new Set<string>();
  private stopping = false;
  /** Wakes each write that waits to be tried again: a stop tries them at once. */
  private readonly waiting = new Set<() => void>();

  constructor(
    private readonly store: Pick<TaskStore, "updateRun">,
    private readonly timers: Timers,
    private readonly log: Logger,
  ) {}

  /**
   * Answers the run as written, or undefined when it is gone or a stop gave up on it. `unwritten`
   * is told the ended run once, at the first failure: reads answer it from memory meanwhile.
   */
  async write(task: Task, run: Run, end: RunEnd, unwritten: (ended: Run) => void): Promise<Run | undefined> {
    const about = {
      runId: run.id,
      taskId: task.id,
      workspaceId: task.workspaceId,
      execution: end.execution.status,
    };
    let waitMs = RETRY_FIRST_MS;
    for (let attempt = 1; ; attempt++) {
      try {
        const ended = await this.store.updateRun(run, (current) => ({ ...current, ...end }));
        if (attempt > 1) this.log.info({ ...about, attempts: attempt }, "task run's end written after all");
        return ended;
      } catch (error) {
        if (this.stopping) {
          this.unrecorded.add(task.workspaceId);
          this.log.error(
            { ...about, err: error },
            "task run's end could not be written before the stop: the next boot records the run interrupted",
          );
          return undefined;
        }
        if (attempt === 1) {
          unwritten({ ...run, ...end });
          this.log.error(
            { ...about, err: error },
            "task run's end could not be written: reads answer it from memory, and the write is tried again",
          );
        }
        await this.pause(waitMs);
        waitMs = Math.min(waitMs * 2, RETRY_MAX_MS);
      }
    }
  }

  /** A stop has begun: each write waiting is tried at once, and a failure now gives up. */
  stop(): void {
    this.stopping = true;
    for (const wake of [...this.waiting]) wake();
  }

  /** Waits `ms` on the instance's timers, or until a stop begins. */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        cancel();
        this.waiting.delete(wake);
        resolve();
      };
      const cancel = this.timers.after(ms, wake);
      this.waiting.add(wake);
    });
  }
}
