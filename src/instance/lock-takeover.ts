import { link, readFile, rename, rm, stat } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { createFileExclusive } from "../storage/exclusive.ts";
import type { StorageLayout } from "../storage/paths.ts";
import { digestOf, readLock, type SeenLock } from "./lock-file.ts";

// Taking a stale instance lock over (ADR 0022, 0133): the watch that confirms a lock is not
// refreshed any more, and the removal that never deletes a lock made after it was judged.
// Nothing here compares this process's clock with a stamp on disk (ADR 0168).

/** How often a starter looks again while another process's takeover is under way. */
export const TAKEOVER_RETRY_MS = 50;

/**
 * Whether a lock its age calls stale is still refreshed, seen without comparing clocks: the age
 * is this process's clock minus the holder's stamp, so clocks more than the stale bound apart
 * made a live lock look stale (test/unit/instance/lock.test.ts "clock skew"). Two readings of
 * the holder's own stamp, `watchMs` apart, do not depend on this clock. "changed": the lock's
 * bytes are not the ones judged any more (rewritten, or taken over): judge it again.
 */
export async function watchHeartbeat(
  path: string,
  seen: SeenLock,
  watchMs: number,
): Promise<"still" | "refreshed" | "changed"> {
  await sleep(watchMs);
  const again = await readLock(path);
  if (again === undefined || again.digest !== seen.digest) return "changed";
  return again.mtimeMs === seen.mtimeMs ? "still" : "refreshed";
}

/**
 * Removes the stale lock `seen`, and never a lock made after it was judged (the classic
 * takeover race: B judges A's dead lock stale, C replaces it, B deletes C's). Only the process
 * that exclusively creates the takeover marker for these exact bytes may touch the lock; it
 * moves the lock aside and removes it only if the bytes are still the ones judged. The caller
 * looks again unless it was "taken": after a wait when "busy" (the lock changed meanwhile), at
 * once when another process's takeover was watched until it ended (`waitedMs`), or when a dead
 * takeover's marker was "cleared".
 */
export async function removeStaleLock(
  layout: StorageLayout,
  seen: SeenLock,
  watchMs: number,
): Promise<"taken" | "busy" | "cleared" | { waitedMs: number }> {
  const path = layout.instanceLockFile();
  const marker = layout.instanceLockTakeoverFile(seen.digest);
  if (!(await createFileExclusive(marker, `${process.pid}\n`))) {
    const watched = await watchMarker(marker, watchMs);
    if (watched !== "still") return { waitedMs: watched };
    await rm(marker, { force: true });
    return "cleared";
  }
  try {
    if ((await readLock(path))?.digest !== seen.digest) return "busy";
    const aside = layout.instanceLockAsideFile();
    try {
      await rename(path, aside);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return "busy";
      throw error;
    }
    const moved = await readFile(aside);
    if (digestOf(moved) !== seen.digest) {
      // Someone replaced the lock since the check just above: put theirs back.
      await link(aside, path).catch(() => undefined);
      await rm(aside, { force: true });
      return "busy";
    }
    await rm(aside, { force: true });
    return "taken";
  } finally {
    await rm(marker, { force: true });
  }
}

/**
 * Watches the takeover marker at `marker`, looking every TAKEOVER_RETRY_MS: how long until it
 * went (or was replaced), or "still" when it was the same file for the whole watch. A live
 * takeover holds its marker only across a read, a rename and a removal, so one that stands still
 * this long was left by a takeover that died half-way. Watched, not aged by this clock minus its
 * mtime: a marker stamped before the clock was stepped back was never "older than the bound",
 * and every start waited on it until the clock caught up (lock-clock-stepped-back.test.ts).
 */
async function watchMarker(marker: string, watchMs: number): Promise<number | "still"> {
  const identity = (s: { ino: number; mtimeMs: number }) => `${s.ino}:${s.mtimeMs}`;
  const first = await stat(marker).then(identity, () => undefined);
  if (first === undefined) return 0;
  for (let waitedMs = 0; waitedMs < watchMs; ) {
    await sleep(TAKEOVER_RETRY_MS);
    waitedMs += TAKEOVER_RETRY_MS;
    if ((await stat(marker).then(identity, () => undefined)) !== first) return waitedMs;
  }
  return "still";
}
