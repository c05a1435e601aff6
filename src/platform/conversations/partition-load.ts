import { stat } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "../../log.ts";
import { mapBounded } from "../../storage/bounded.ts";
import { namesIn } from "../../storage/folders.ts";
import type { IndexLimits } from "./index-limits.ts";
import { readSnapshot, SNAPSHOT_FILE, type SnapshotRead } from "./index-snapshot.ts";
import { catchUpLog } from "./log-catch-up.ts";
import { conversationIdOfFile, LOG_SUFFIX } from "./model.ts";
import { PartitionIndex } from "./partition-index.ts";
import type { ResumableSnapshots } from "./resumable-snapshots.ts";

const LOGS_IN_FLIGHT = 16;

/** A partition's index as loaded from its owner folder. */
export interface PartitionLoad {
  index: PartitionIndex;
  /** How many logs the load read, in part or whole, because the snapshot did not cover them. */
  logsRead: number;
  /** The index's numbering when the load kept the snapshot's generation (Loaded.saved). */
  saved: string | undefined;
  /** Whether the snapshot is missing or no longer holds the index: it is to be written again. */
  stale: boolean;
}

export interface LoadContext {
  limits: IndexLimits;
  resumable: ResumableSnapshots;
  log: Logger;
}

/**
 * Loads partition `partition`'s index from its snapshot in `ownerDir`, checked against the logs (a
 * stat each; a log that grew since is read from where the snapshot stopped, one it does not know
 * is read whole, one gone is removed). The logs are the truth: a snapshot that is missing,
 * unreadable or behind costs reads, never a wrong answer.
 */
export async function loadPartition(
  ownerDir: string,
  partition: string,
  context: LoadContext,
): Promise<PartitionLoad> {
  const snapshot = await readTrustedSnapshot(ownerDir, context);
  const index = snapshot?.index ?? new PartitionIndex(context.limits);
  let logsRead = 0;
  let behind = false;
  const onDisk = await logIds(ownerDir);
  await mapBounded(onDisk, LOGS_IN_FLIGHT, async (id) => {
    const path = join(ownerDir, `${id}${LOG_SUFFIX}`);
    let size: number;
    try {
      size = (await stat(path)).size;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
      throw error;
    }
    const covered = index.bytesOf(id);
    if (covered === size) return;
    // Grown since the snapshot: read from where it stopped. Unknown to it, or shorter than it
    // says (not the log it indexed): forget what it says and read the log whole.
    const shorter = covered !== undefined && covered > size;
    if (shorter) index.remove(id);
    logsRead += 1;
    // Behind only when the read changed the index: a torn last line (a crash mid-append) adds no
    // event, so the snapshot still holds all of it, and renewing or rewriting it at every load
    // would write an unchanged partition again and again (resumable-snapshots.test.ts "torn").
    if ((await catchUpLog(index, path, id)) || shorter) behind = true;
  });
  // A snapshot behind the logs, one another process wrote (a restart), or one this instance
  // numbered past or wrote an older copy of (put back): the index that gave out a search's
  // cursors may have numbered the events read now, or events removed since, otherwise, and new
  // events would take those numbers (adr/0144).
  const resumes =
    snapshot !== undefined &&
    !behind &&
    context.resumable.resumes(partition, snapshot.writer, index.numbering);
  if (snapshot && !resumes) index.renewGeneration();
  // Taken before the removals below, which may number the events again (a compaction).
  const saved = resumes ? index.numbering : undefined;
  const present = new Set(onDisk);
  let stale = snapshot === undefined || behind;
  for (const id of index.ids()) {
    if (present.has(id)) continue;
    index.remove(id);
    stale = true;
  }
  return { index, logsRead, saved, stale };
}

/** The index the snapshot holds; undefined when there is none or it cannot be trusted. */
async function readTrustedSnapshot(
  ownerDir: string,
  context: LoadContext,
): Promise<SnapshotRead | undefined> {
  try {
    return await readSnapshot(join(ownerDir, SNAPSHOT_FILE), context.limits);
  } catch (error) {
    context.log.warn({ err: error }, "conversation index snapshot unreadable; rebuilding");
    return undefined;
  }
}

/** The conversation ids whose logs an owner folder holds; none when it does not exist. */
async function logIds(ownerDir: string): Promise<string[]> {
  return (await namesIn(ownerDir)).flatMap((name) => conversationIdOfFile(name) ?? []);
}
