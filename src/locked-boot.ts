import { acquireInstanceLock, type InstanceLock, InstanceLockLostWhileBooting } from "./instance/lock.ts";
import type { Clock } from "./kernel/clock.ts";
import type { Logger } from "./log.ts";
import { exitOnceStopped } from "./stop-exit.ts";
import type { StorageLayout } from "./storage/paths.ts";

/**
 * How a process whose lock was lost while it served ends, whether its stop ends or fails: as one
 * that finds it lost while booting does (InstanceLockLostWhileBooting). It ended with 0 "because
 * the process that took the root over serves it", but a lock removed (an operator's `rm`, a
 * cleanup, a restore of the root) has no new holder, and 0 told a supervisor (systemd
 * `Restart=on-failure`, a pod's `OnFailure`) to leave the root served by no one
 * (instance-lock.test.ts "removed"). Which of the two it was cannot be told reliably: a takeover
 * passes through an absent lock, and a lock restored from a backup names a holder long gone.
 * Restarted while another holds the root, the process exits 1 naming that holder (ADR 0093).
 */
const LOCK_LOST_EXIT_CODE = 1;

export interface LockedBootOptions {
  publicUrl: string;
  log: Logger;
  clock: Clock;
  heartbeatMs?: number | undefined;
  /** Ends the process once the stop a lost lock set off has ended (the CLI's); none by default. */
  exit?: ((code: number) => void) | undefined;
}

/**
 * Boots under the data root's lock, taken before anything else reads or writes the root: one root,
 * one process (ADR 0022). `boot` asks `lockLost` just before it listens, and it is asked once more
 * after, so a loss cannot fall between (issue: a process frozen while booting, taken over, then
 * woken, listened beside the new holder). A loss found until then is the boot's error
 * (InstanceLockLostWhileBooting), whatever the close of what it built says: a part of that close
 * that failed was reported instead. One found later stops the instance and ends the process
 * (`exit`) with LOCK_LOST_EXIT_CODE once the stop has ended; a part of it that failed was a
 * rejection nobody handled (test/integration/instance-lock.test.ts "a process that loses its lock").
 */
export async function bootLocked<T extends { stop(): Promise<void> }>(
  layout: StorageLayout,
  options: LockedBootOptions,
  boot: (lock: InstanceLock, lockLost: () => Promise<boolean>) => Promise<T>,
): Promise<T> {
  const { log, exit = () => undefined } = options;
  let serving: T | undefined;
  let lostWhileBooting = false;
  const lock = await acquireInstanceLock(layout, {
    publicUrl: options.publicUrl,
    log,
    clock: options.clock,
    onLost: () => {
      // Joined, not cut short, when a signal's stop is under way, and joined by a signal's.
      if (serving) exitOnceStopped(serving.stop(), log, exit, LOCK_LOST_EXIT_CODE);
      else lostWhileBooting = true;
    },
    ...(options.heartbeatMs === undefined ? {} : { heartbeatMs: options.heartbeatMs }),
  });
  // stillHeld reads the heartbeat's finding after its own read of the file, not before: a beat
  // that found the loss meanwhile turned itself off, and that read, of the bytes from before the
  // takeover, said "held" (instance-lock.test.ts "while the check after listening reads it").
  const lockLost = async () => !(await lock.stillHeld());
  let booted: T;
  try {
    booted = await boot(lock, lockLost);
  } catch (error) {
    await lock.release();
    throw error;
  }
  // The flag again, in the step that sets `serving`: a loss the heartbeat finds between the
  // check's answer and this step comes to onLost while `serving` is still unset.
  if ((await lockLost()) || lostWhileBooting) {
    // Lost between the check before listening and here: what listens is closed, never served. A
    // part of the close that fails is logged by the stop itself.
    await booted.stop().catch(() => undefined);
    throw new InstanceLockLostWhileBooting(layout.instanceLockFile());
  }
  serving = booted;
  return booted;
}
