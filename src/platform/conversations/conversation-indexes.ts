import { join } from "node:path";
import { type Clock, systemClock } from "../../kernel/clock.ts";
import type { Timers } from "../../kernel/timers.ts";
import type { Logger } from "../../log.ts";
import { KeyedLock } from "../../storage/keyed-lock.ts";
import type { PartitionPaths } from "../../storage/paths.ts";
import { INDEX_LIMITS, type IndexLimits } from "./index-limits.ts";
import { type Loaded, LoadedPartitions, type ResidencyOptions } from "./loaded-partitions.ts";
import { catchUpLog } from "./log-catch-up.ts";
import { type ConversationEvent, LOG_SUFFIX } from "./model.ts";
import type { PartitionIndex } from "./partition-index.ts";
import { loadPartition } from "./partition-load.ts";
import { ResumableSnapshots } from "./resumable-snapshots.ts";
import { SnapshotSchedule, savePartition } from "./snapshot-saves.ts";

export { SNAPSHOT_FILE } from "./index-snapshot.ts";

export interface IndexOptions extends ResidencyOptions {
  limits?: IndexLimits;
}

/** A partition's index for one call, and how many logs that call had to read to bring it up to date. */
export interface IndexView {
  index: PartitionIndex;
  logsRead: number;
}

/**
 * The conversation index of each owner partition (adr/0046): loaded on first use from its
 * snapshot, checked against the logs (partition-load.ts), then kept by the writers. Every change
 * to one partition's index runs under its lock, in order, and is saved a while after
 * (snapshot-saves.ts). Held in memory within MAX_LOADED_INDEX_BYTES (estimated) and
 * MAX_LOADED_PARTITIONS, least recently used dropped first, and dropped after
 * CONVERSATION_INDEX_IDLE_MS unused (loaded-partitions.ts); saved before it is dropped (adr/0078).
 */
export class ConversationIndexes {
  private readonly loaded: LoadedPartitions;
  private readonly locks = new KeyedLock();
  private readonly saves: SnapshotSchedule;
  private readonly resumable = new ResumableSnapshots();
  private readonly limits: IndexLimits;
  private cancelSweep: (() => void) | undefined;
  private stopped = false;

  constructor(
    private readonly storage: PartitionPaths,
    private readonly timers: Timers,
    private readonly log: Logger,
    private readonly clock: Clock = systemClock,
    options: IndexOptions = {},
  ) {
    this.limits = options.limits ?? INDEX_LIMITS;
    this.loaded = new LoadedPartitions(options);
    this.saves = new SnapshotSchedule(timers);
  }

  /** Partitions whose index is in memory now. */
  get loadedPartitions(): number {
    return this.loaded.size;
  }

  /** The estimated bytes of every index in memory now. */
  get loadedBytes(): number {
    return this.loaded.bytes;
  }

  /** Runs `read` on the owner's index, up to date with their logs. */
  async read<T>(workspaceId: string, ownerId: string, read: (view: IndexView) => T | Promise<T>): Promise<T> {
    return this.locks.run(key(workspaceId, ownerId), async () => read(await this.load(workspaceId, ownerId)));
  }

  /**
   * A writer appended `events` to a log, taking it from byte `from` to byte `to`. Appends to one
   * log may reach here out of order: one that does not start where the index stops makes it read
   * the log from there instead, and one the index already covers changes nothing.
   */
  async appended(
    workspaceId: string,
    ownerId: string,
    id: string,
    /** `edited`: the writer found the log changed on disk since it last wrote it. */
    change: { from: number; to: number; events: readonly ConversationEvent[]; edited?: boolean },
  ): Promise<void> {
    await this.update(workspaceId, ownerId, async ({ index }) => {
      const covered = index.bytesOf(id) ?? 0;
      if (change.edited) index.remove(id);
      if (!change.edited && covered === change.from) index.apply(id, change.events, change.to);
      else if (change.edited || covered !== change.to) await this.catchUp(index, workspaceId, ownerId, id);
      else return;
      this.changed(workspaceId, ownerId);
    });
  }

  /** A writer removed a log. */
  async removed(workspaceId: string, ownerId: string, id: string): Promise<void> {
    await this.update(workspaceId, ownerId, ({ index }) => {
      index.remove(id);
      this.changed(workspaceId, ownerId);
    });
  }

  /**
   * Applies a writer's change, which is durable and acknowledged by now: a failure here must not
   * reach the writer's caller, who would send the change again. The index is dropped instead, and
   * loaded again from the logs at its next read.
   */
  private async update(
    workspaceId: string,
    ownerId: string,
    change: (view: IndexView) => void | Promise<void>,
  ): Promise<void> {
    try {
      await this.read(workspaceId, ownerId, change);
    } catch (error) {
      this.forget(key(workspaceId, ownerId));
      this.log.warn({ err: error, workspaceId }, "conversation index dropped after a failed update");
    }
  }

  private async load(workspaceId: string, ownerId: string): Promise<IndexView> {
    const partition = key(workspaceId, ownerId);
    const known = this.loaded.use(partition, this.clock());
    if (known) {
      this.dropBeyondBudget(partition);
      return { index: known.index, logsRead: 0 };
    }
    const ownerDir = this.storage.ownerDir(workspaceId, ownerId);
    const { index, logsRead, saved, stale } = await loadPartition(ownerDir, partition, {
      limits: this.limits,
      resumable: this.resumable,
      log: this.log,
    });
    this.loaded.add(partition, { index, lastUsed: this.clock(), saved });
    if (stale) this.changed(workspaceId, ownerId);
    this.dropBeyondBudget(partition);
    this.armSweep();
    return { index, logsRead };
  }

  /** Brings the index up to date with one log (log-catch-up.ts). */
  private catchUp(index: PartitionIndex, workspaceId: string, ownerId: string, id: string): Promise<boolean> {
    return catchUpLog(index, join(this.storage.ownerDir(workspaceId, ownerId), `${id}${LOG_SUFFIX}`), id);
  }

  /** Arms one save of the partition's snapshot for every change made before it runs. */
  private changed(workspaceId: string, ownerId: string): void {
    const partition = key(workspaceId, ownerId);
    // After a stop nothing is armed: a change made while the last requests drain is read from
    // its log at the next start, and no timer outlives the instance.
    if (this.stopped) return;
    this.saves.arm(partition, this.loaded.get(partition)?.index, () => {
      void this.locks
        .run(partition, () => this.save(workspaceId, ownerId))
        .catch((error: unknown) => {
          // A snapshot that could not be written is only one that is behind: the next load reads more.
          this.log.warn({ err: error, workspaceId }, "conversation index snapshot not written");
        });
    });
  }

  private async save(workspaceId: string, ownerId: string): Promise<void> {
    const partition = key(workspaceId, ownerId);
    this.saves.cancel(partition);
    const loaded = this.loaded.get(partition);
    if (!loaded) return;
    await savePartition(this.storage.ownerDir(workspaceId, ownerId), partition, loaded, this.resumable);
  }

  /** A graceful stop: every unsaved index is saved now, so the next start reads no log. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.cancelSweep?.();
    this.cancelSweep = undefined;
    await this.flush();
  }

  /** Saves every index with unsaved changes now. */
  async flush(): Promise<void> {
    await Promise.all(
      this.saves.partitions().map((partition) => {
        const [workspaceId = "", ownerId = ""] = partition.split("/");
        return this.locks.run(partition, () => this.save(workspaceId, ownerId));
      }),
    );
  }

  /** Drops the least recently used partitions past the budget; never `inUse`, the one this call is using. */
  private dropBeyondBudget(inUse: string): void {
    for (const partition of this.loaded.beyondBudget(inUse)) void this.drop(partition, () => true);
  }

  /** Saves and drops the partitions unused for the idle time; also run by a timer while any is loaded. */
  async sweep(now = this.clock()): Promise<void> {
    await Promise.all(
      this.loaded.idle(now).map((partition) =>
        // Checked again under the lock: a use queued before the drop keeps it.
        this.drop(partition, (loaded) => this.loaded.isIdle(loaded, now)),
      ),
    );
  }

  private armSweep(): void {
    if (this.stopped || this.cancelSweep) return;
    this.cancelSweep = this.timers.after(Math.max(1_000, Math.floor(this.loaded.idleMs / 2)), () => {
      this.cancelSweep = undefined;
      void this.sweep().then(() => {
        if (this.loaded.size > 0) this.armSweep();
      });
    });
  }

  /**
   * Under the partition's lock, so no use is in flight: saves its unsaved changes, so the next
   * load reads the snapshot rather than the logs and keeps its generation, and drops it, saved or
   * not (the logs are the truth, and an index that cannot be saved must not stay in memory for ever).
   */
  private drop(partition: string, still: (loaded: Loaded) => boolean): Promise<void> {
    this.loaded.dropStarted(partition);
    const [workspaceId = "", ownerId = ""] = partition.split("/");
    return this.locks
      .run(partition, async () => {
        const loaded = this.loaded.get(partition);
        if (!loaded || !still(loaded)) return;
        try {
          // Saved too when its snapshot is of another numbering (renewed by the load, or numbered
          // since a failed save): the next load keeps the generation only of one written here of
          // the index dropped (search-cursor.test.ts "one given after is kept over an idle drop").
          // Once written, an unchanged partition's drops write nothing more.
          const otherNumbering = loaded.saved !== loaded.index.numbering;
          if (this.saves.has(partition) || otherNumbering) await this.save(workspaceId, ownerId);
        } finally {
          this.forget(partition);
          this.saves.cancel(partition);
        }
      })
      .catch((error: unknown) => this.log.warn({ err: error, workspaceId }, "conversation index not saved"))
      .finally(() => this.loaded.dropEnded(partition));
  }

  /**
   * Drops the partition's index from memory, remembering when it numbered events past its last
   * snapshot (a save failed, now or before): those numbers are lost with it.
   */
  private forget(partition: string): void {
    const loaded = this.loaded.delete(partition);
    if (loaded && loaded.saved !== loaded.index.numbering) this.resumable.droppedUnsaved(partition);
  }
}

function key(workspaceId: string, ownerId: string): string {
  return `${workspaceId}/${ownerId}`;
}
