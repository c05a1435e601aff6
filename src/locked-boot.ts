import { acquireInstanceLock, type InstanceLock, InstanceLockLostWhileBooting } from "./instance/lock.ts";
import type { Clock } from "./kernel/clock.ts";
import type { Logger } from "./log.ts";
import { exitOnceStopped } from "./stop-exit.ts";
import type { StorageLayout } from "./storage/paths.ts";

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
 * (`exit`): 0, or 1 when a part of the stop failed, which was a rejection nobody handled
 * (test/integration/instance-lock.test.ts "a process that loses its lock").
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
      if (serving) exitOnceStopped(serving.stop(), log, exit);
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
