import { existsSync } from "node:fs";
import { access } from "node:fs/promises";
import { dirname } from "node:path";
import type { PlatformApp } from "../../src/platform/app.ts";
import { AppTools } from "../../src/platform/app-tools.ts";

/**
 * A platform app whose stop goes on writing (disk round trips, as the tasks app's does when it
 * records a run interrupted) until the lock at `lockPath` is gone, or after `patience` of them,
 * so a close that waits for it is never held for ever. `lockHeldAtEnd()` says whether the lock
 * was still there when the stop ended: a stop waited for before the lock goes always finds it.
 */
export function writingStop(
  lockPath: string,
  patience = 1000,
): { app: PlatformApp; stopped: () => Promise<void>; lockHeldAtEnd: () => boolean | undefined } {
  let ended: Promise<void> = Promise.resolve();
  let heldAtEnd: boolean | undefined;
  const app: PlatformApp = {
    name: "writer",
    start: () => ({
      tools: new AppTools("writer"),
      stop: () => {
        ended = (async () => {
          for (let look = 0; look < patience && existsSync(lockPath); look++) await access(dirname(lockPath));
          heldAtEnd = existsSync(lockPath);
        })();
        return ended;
      },
    }),
  };
  return { app, stopped: () => ended, lockHeldAtEnd: () => heldAtEnd };
}
