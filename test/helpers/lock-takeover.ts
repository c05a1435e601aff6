import { writeFile } from "node:fs/promises";
import type { PlatformApp } from "../../src/platform/app.ts";
import { AppTools } from "../../src/platform/app-tools.ts";

/** The lock as another process that took the data root over writes it (src/instance/lock.ts). */
export const ANOTHER_HOLDER = {
  pid: 1,
  host: "elsewhere.example",
  startedAt: "now",
  publicUrl: "http://x",
  token: "theirs",
};

/** Replaces the lock at `lockPath` with ANOTHER_HOLDER's, as a takeover of a frozen holder does. */
export function takeOver(lockPath: string): Promise<void> {
  return writeFile(lockPath, JSON.stringify(ANOTHER_HOLDER));
}

/**
 * A platform app whose archive releaser takes the root over (the lock at `lockPath()`) while it
 * releases the first archive, as if this process had been frozen past the stale bound there;
 * `released` names each archive it was asked to release.
 */
export function takenOverAtFirstRelease(lockPath: () => string): { app: PlatformApp; released: string[] } {
  const released: string[] = [];
  const app: PlatformApp = {
    name: "frozen",
    start: () => ({ tools: new AppTools("frozen") }),
    archiveReleaser: () => async (_workspaceId, archivedName) => {
      released.push(archivedName);
      if (released.length === 1) await takeOver(lockPath());
      return [];
    },
  };
  return { app, released };
}
