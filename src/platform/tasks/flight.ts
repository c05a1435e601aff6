import type { Run } from "./model.ts";
import type { AbortReason } from "./outcome.ts";

/** A run in flight in this process (TaskRunner): its call's abort, and when its end is known. */
export interface Flight {
  taskId: string;
  controller: AbortController;
  reason?: AbortReason;
  /** Resolves once the run's end is on disk, or a stop gave up writing it. */
  done?: Promise<void>;
  /**
   * The run as it ended, once a write of its end failed: reads answer it (`endedRun`) while the
   * write is tried again. Not before: a run read as ended is one whose end is on disk, unless the
   * disk refuses it.
   */
  unwritten?: Run;
  /** Set once the run's end is on disk: the run counts among its task's kept runs from then on. */
  endWritten?: boolean;
  /** Resolves `known`: once the end is on disk, or in memory while its write is tried again. */
  endKnown: () => void;
  known: Promise<void>;
}

/** A run of `taskId` taking off: not aborted, its end not known. */
export function newFlight(taskId: string): Flight {
  let endKnown = () => {};
  const known = new Promise<void>((resolve) => {
    endKnown = resolve;
  });
  return { taskId, controller: new AbortController(), known, endKnown };
}

/** Aborts the run's call; the first reason is the one its end records, later ones change nothing. */
export function abortFlight(flight: Flight, reason: AbortReason): void {
  if (flight.reason) return;
  flight.reason = reason;
  flight.controller.abort(new Error(`task run ${reason}`));
}
