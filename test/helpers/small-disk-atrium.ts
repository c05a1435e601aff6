import { bootstrapWorkspace, capturingLogger, startTestAtrium, type TestAtrium } from "./atrium.ts";
import type { FakeTime } from "./fake-time.ts";
import { mountSmallDisk, type SmallDisk } from "./small-disk.ts";

/** A real Atrium whose data root is a small tmpfs of its own (small-disk.ts), with alice's workspace. */
export interface SmallDiskAtrium {
  disk: SmallDisk;
  instance: TestAtrium;
  captured: ReturnType<typeof capturingLogger>;
  ws: string;
  /** Closes the Atrium, whatever state the full disk left it in, and unmounts the disk. */
  stop(): Promise<void>;
}

/**
 * Mounts an 8 MiB tmpfs and starts Atrium on it, logging at `logLevel` to `captured`, on `time`'s
 * clock and timers when given. Needs `canMount`.
 */
export async function startSmallDiskAtrium(
  options: { logLevel?: string; time?: FakeTime } = {},
): Promise<SmallDiskAtrium> {
  const disk = await mountSmallDisk("8m");
  const captured = capturingLogger(options.logLevel ?? "info");
  let instance: TestAtrium | undefined;
  try {
    instance = await startTestAtrium({
      dir: disk.dir,
      log: captured.log,
      clock: options.time?.clock,
      timers: options.time?.timers,
    });
    const ws = await bootstrapWorkspace(instance, "alice");
    return smallDiskAtrium(disk, instance, captured, ws);
  } catch (error) {
    await instance?.close().catch(() => undefined);
    await disk.unmount();
    throw error;
  }
}

function smallDiskAtrium(
  disk: SmallDisk,
  instance: TestAtrium,
  captured: ReturnType<typeof capturingLogger>,
  ws: string,
): SmallDiskAtrium {
  return {
    disk,
    instance,
    captured,
    ws,
    async stop() {
      await instance.close().catch(() => undefined);
      await disk.unmount();
    },
  };
}
