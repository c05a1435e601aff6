import type { Timers } from "../../kernel/timers.ts";
import type { Logger } from "../../log.ts";

/**
 * How long after its run was cancelled (a timeout, a cancel, a stop) a tool call that has not
 * settled still holds its task's slot; past it the slot is freed, logged, so a call that never
 * settles does not stop the task for ever (ADR 0106).
 */
export const ABANDONED_CALL_SLOT_MS = 60_000;

/** Who a held slot's call is for, as the warning about an abandoned one names it. */
export interface SlotHolder {
  runId: string;
  taskId: string;
  workspaceId: string;
  tool: string;
}

/**
 * The slots of each task's `maxConcurrentRuns`: one per tool call, taken when a run starts and
 * given back when its call has settled, which may be after the run ended (ADR 0106). Taken
 * synchronously, so two starts racing for a task's last slot cannot both win.
 */
export class RunSlots {
  /** Run id → its task's id. */
  private readonly held = new Map<string, string>();

  constructor(
    private readonly timers: Timers,
    private readonly log: Logger,
  ) {}

  /** How many of the task's slots are held: its runs in flight, and calls still ending after theirs did. */
  count(taskId: string): number {
    let count = 0;
    for (const holder of this.held.values()) if (holder === taskId) count++;
    return count;
  }

  take(runId: string, taskId: string): void {
    this.held.set(runId, taskId);
  }

  release(runId: string): void {
    this.held.delete(runId);
  }

  /**
   * Gives the slot back once `call` settles: a call the run's abort stopped waiting for (a timeout,
   * a cancel) may still be running — a platform tool that ignores its signal — and the task's next
   * run must not overlap it. Held for at most ABANDONED_CALL_SLOT_MS, then freed and logged
   * (runner.test.ts "a call that ignores its signal", "a call that never answers"). A remote call
   * settles at its abort: the source rejects it and the gate's own waits hear the signal
   * (ADR 0068, 0106).
   */
  releaseWhenSettled(holder: SlotHolder, call: Promise<unknown>): void {
    const free = () => {
      stopWaiting();
      this.held.delete(holder.runId);
    };
    const stopWaiting = this.timers.after(ABANDONED_CALL_SLOT_MS, () => {
      this.log.warn(
        holder,
        "task run's tool call has not ended a minute after it was cancelled: its slot is freed, and the next run may overlap it",
      );
      free();
    });
    call.then(free, free);
  }
}
