import { writeFile } from "node:fs/promises";

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
