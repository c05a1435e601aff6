import { join } from "node:path";
import type { Timers } from "../../kernel/timers.ts";
import { SNAPSHOT_FILE, writeSnapshot } from "./index-snapshot.ts";
import type { Loaded } from "./loaded-partitions.ts";
import type { PartitionIndex } from "./partition-index.ts";
import type { ResumableSnapshots } from "./resumable-snapshots.ts";

/**
 * A changed index is written this long after its first unsaved change, with every change since,
 * per started thousand conversations or SAVE_BYTES_PER_DELAY_STEP of index, whichever is more: a
 * save costs time in proportion to the index, so a large one is saved less often and a busy
 * partition never spends more than a few percent of its time saving.
 */
export const SNAPSHOT_DELAY_MS = 5_000;
const CONVERSATIONS_PER_DELAY_STEP = 1000;
const SAVE_BYTES_PER_DELAY_STEP = 8 * 1024 * 1024;

/**
 * The one save armed for each partition with unsaved changes: armed at its first change, it
 * writes every change made before it runs.
 */
export class SnapshotSchedule {
  private readonly pending = new Map<string, () => void>();

  constructor(private readonly timers: Timers) {}

  /** Whether the partition has unsaved changes whose save is armed. */
  has(partition: string): boolean {
    return this.pending.has(partition);
  }

  /** The partitions whose save is armed. */
  partitions(): string[] {
    return [...this.pending.keys()];
  }

  /** Arms `save` after the delay `index`'s size calls for, unless the partition's is armed already. */
  arm(partition: string, index: PartitionIndex | undefined, save: () => void): void {
    if (this.pending.has(partition)) return;
    const steps = Math.max(
      1,
      Math.ceil((index?.size ?? 0) / CONVERSATIONS_PER_DELAY_STEP),
      Math.ceil((index?.estimatedBytes ?? 0) / SAVE_BYTES_PER_DELAY_STEP),
    );
    this.pending.set(partition, this.timers.after(SNAPSHOT_DELAY_MS * steps, save));
  }

  /** Disarms the partition's save: it is being written now, or its index is gone. */
  cancel(partition: string): void {
    this.pending.get(partition)?.();
    this.pending.delete(partition);
  }
}

/**
 * Writes partition `partition`'s snapshot into `ownerDir`, named with this instance's boot id, and
 * records its numbering as saved (adr/0144).
 */
export async function savePartition(
  ownerDir: string,
  partition: string,
  loaded: Loaded,
  resumable: ResumableSnapshots,
): Promise<void> {
  try {
    await writeSnapshot(join(ownerDir, SNAPSHOT_FILE), loaded.index, resumable.bootId);
    loaded.saved = loaded.index.numbering;
    resumable.saved(partition, loaded.saved);
  } catch (error) {
    // An owner with no conversation folder here has nothing to save; a removed workspace neither.
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    // Nor a snapshot a load could keep the generation of: nothing to remember at its drop. Its
    // numbering is remembered as saved all the same, so that a snapshot put back with the folder,
    // older than it, is not resumed; among the recent saves, so an owner with no folder does not
    // fill the failed-save set (resumable-snapshots.test.ts "folder").
    loaded.saved = loaded.index.numbering;
    resumable.saved(partition, loaded.saved);
  }
}
