import type { Logger } from "./log.ts";

/**
 * Ends the process once `stopping` (a graceful stop) has ended: `endedCode` (0 by default), or 1
 * once its failure is logged (`shutdown failed`, ADR 0093), whether a signal asked for the stop
 * (cli.ts) or a lost lock set it off (locked-boot.ts, which ends with 1 either way). The latter's
 * failure was a rejection nobody handled, which ended the process with a stack trace instead, and
 * its success left the process to end by itself (test/integration/instance-lock.test.ts "ends the
 * process with exit").
 */
export function exitOnceStopped(
  stopping: Promise<void>,
  log: Logger,
  exit: (code: number) => void,
  endedCode = 0,
): void {
  stopping.then(
    () => exit(endedCode),
    (error: unknown) => {
      log.error({ err: error }, "shutdown failed");
      exit(1);
    },
  );
}
