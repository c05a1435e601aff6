import { stat } from "node:fs/promises";
import { join } from "node:path";
import { type Clock, systemClock } from "../../kernel/clock.ts";
import type { Timers } from "../../kernel/timers.ts";
import type { Logger } from "../../log.ts";
import { mapBounded } from "../../storage/bounded.ts";
import { namesIn } from "../../storage/folders.ts";
import { KeyedLock } from "../../storage/keyed-lock.ts";
import type { PartitionPaths } from "../../storage/paths.ts";
import { INDEX_LIMITS, type IndexLimits } from "./index-limits.ts";
import { readSnapshot, SNAPSHOT_FILE, type SnapshotRead, writeSnapshot } from "./index-snapshot.ts";
import { catchUpLog } from "./log-catch-up.ts";
import { type ConversationEvent, conversationIdOfFile, LOG_SUFFIX } from "./model.ts";
import { PartitionIndex } from "./partition-index.ts";
import { ResumableSnapshots } from "./resumable-snapshots.ts";

export { SNAPSHOT_FILE } from "./index-snapshot.ts";
/**
 * A changed index is written this long after its first unsaved change, with every change since,
 * per started thousand conversations or SAVE_BYTES_PER_DELAY_STEP of index, whichever is more: a
 * save costs time in proportion to the index, so a large one is saved less often and a busy
 * partition never spends more than a few percent of its time saving.
 */
export const SNAPSHOT_DELAY_MS = 5_000;
const CONVERSATIONS_PER_DELAY_STEP = 1000;
const SAVE_BYTES_PER_DELAY_STEP = 8 * 1024 * 1024;
/** Partitions whose index is kept in memory at most; the least recently used is saved and dropped. */
const MAX_LOADED_PARTITIONS = 100;
/**
 * The estimated bytes of every partition's index together (adr/0078): past it, the least recently
 * used are saved and dropped, never the one in use. One partition stops growing at its own budget
 * (INDEX_LIMITS.partitionBytes), so the total stays near this.
 */
export const MAX_LOADED_INDEX_BYTES = 256 * 1024 * 1024;
/**
 * A partition unused this long is saved and dropped: the idle period of the file index and of a
 * workspace's sources (FILE_INDEX_IDLE_MS, IDLE_EVICT_MS), so an idle instance pays disk, not memory.
 */
export const CONVERSATION_INDEX_IDLE_MS = 10 * 60 * 1000;
const LOGS_IN_FLIGHT = 16;

export interface IndexOptions {
  limits?: IndexLimits;
  maxLoadedBytes?: number;
  idleMs?: number;
}

/** A partition's index in memory, and when it was last used. */
interface Loaded {
  index: PartitionIndex;
  lastUsed: number;
  /**
   * The numbering (PartitionIndex.numbering) of the snapshot this instance last wrote of it, or
   * loaded it from and kept the generation of.
   */
  saved?: string;
}

/** A partition's index for one call, and how many logs that call had to read to bring it up to date. */
export interface IndexView {
  index: PartitionIndex;
  logsRead: number;
}

/**
 * The conversation index of each owner partition (adr/0046): loaded on first use from its
 * snapshot, checked against the logs (a stat each; a log that grew since is read from where the
 * snapshot stopped, one it does not know is read whole), then kept by the writers. The logs are
 * the truth: a snapshot that is missing, unreadable or behind costs reads, never a wrong answer.
 * Every change to one partition's index runs under its lock, in order. Held in memory within
 * MAX_LOADED_INDEX_BYTES (estimated) and MAX_LOADED_PARTITIONS, least recently used dropped
 * first, and dropped after CONVERSATION_INDEX_IDLE_MS unused; saved before it is dropped
 * (adr/0078).
 */
export class ConversationIndexes {
  private readonly loaded = new Map<string, Loaded>();
  private readonly locks = new KeyedLock();
  private readonly pendingSaves = new Map<string, () => void>();
  /** Partitions whose drop is queued behind their lock: no longer counted against the budget. */
  private readonly dropping = new Set<string>();
  private readonly resumable = new ResumableSnapshots();
  private readonly limits: IndexLimits;
  private readonly maxLoadedBytes: number;
  private readonly idleMs: number;
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
    this.maxLoadedBytes = options.maxLoadedBytes ?? MAX_LOADED_INDEX_BYTES;
    this.idleMs = options.idleMs ?? CONVERSATION_INDEX_IDLE_MS;
  }

  /** Partitions whose index is in memory now. */
  get loadedPartitions(): number {
    return this.loaded.size;
  }

  /** The estimated bytes of every index in memory now. */
  get loadedBytes(): number {
    let bytes = 0;
    for (const { index } of this.loaded.values()) bytes += index.estimatedBytes;
    return bytes;
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
    const known = this.loaded.get(partition);
    if (known) {
      // Most recently used last, so the first key is the one to drop.
      this.loaded.delete(partition);
      known.lastUsed = this.clock();
      this.loaded.set(partition, known);
      this.dropBeyondBudget(partition);
      return { index: known.index, logsRead: 0 };
    }
    const ownerDir = this.storage.ownerDir(workspaceId, ownerId);
    const snapshot = await this.readSnapshot(ownerDir);
    const index = snapshot?.index ?? new PartitionIndex(this.limits);
    let logsRead = 0;
    let behind = false;
    const onDisk = await logIds(ownerDir);
    await mapBounded(onDisk, LOGS_IN_FLIGHT, async (id) => {
      let size: number;
      try {
        size = (await stat(join(ownerDir, `${id}${LOG_SUFFIX}`))).size;
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
      if ((await this.catchUp(index, workspaceId, ownerId, id)) || shorter) behind = true;
    });
    // A snapshot behind the logs, one another process wrote (a restart), or one this instance
    // numbered past or wrote an older copy of (put back): the index that gave out a search's
    // cursors may have numbered the events read now, or events removed since, otherwise, and new
    // events would take those numbers (adr/0144).
    const resumes =
      snapshot !== undefined &&
      !behind &&
      this.resumable.resumes(partition, snapshot.writer, index.numbering);
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
    this.loaded.set(partition, { index, lastUsed: this.clock(), saved });
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
    if (this.stopped || this.pendingSaves.has(partition)) return;
    const index = this.loaded.get(partition)?.index;
    const steps = Math.max(
      1,
      Math.ceil((index?.size ?? 0) / CONVERSATIONS_PER_DELAY_STEP),
      Math.ceil((index?.estimatedBytes ?? 0) / SAVE_BYTES_PER_DELAY_STEP),
    );
    const cancel = this.timers.after(SNAPSHOT_DELAY_MS * steps, () => {
      void this.locks
        .run(partition, () => this.save(workspaceId, ownerId))
        .catch((error: unknown) => {
          // A snapshot that could not be written is only one that is behind: the next load reads more.
          this.log.warn({ err: error, workspaceId }, "conversation index snapshot not written");
        });
    });
    this.pendingSaves.set(partition, cancel);
  }

  private async save(workspaceId: string, ownerId: string): Promise<void> {
    const partition = key(workspaceId, ownerId);
    this.pendingSaves.get(partition)?.();
    this.pendingSaves.delete(partition);
    const loaded = this.loaded.get(partition);
    if (!loaded) return;
    try {
      const path = join(this.storage.ownerDir(workspaceId, ownerId), SNAPSHOT_FILE);
      await writeSnapshot(path, loaded.index, this.resumable.bootId);
      loaded.saved = loaded.index.numbering;
      this.resumable.saved(partition, loaded.saved);
    } catch (error) {
      // An owner with no conversation folder here has nothing to save; a removed workspace neither.
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      // Nor a snapshot a load could keep the generation of: nothing to remember at its drop. Its
      // numbering is remembered as saved all the same, so that a snapshot put back with the folder,
      // older than it, is not resumed; among the recent saves, so an owner with no folder does not
      // fill the failed-save set (resumable-snapshots.test.ts "folder").
      loaded.saved = loaded.index.numbering;
      this.resumable.saved(partition, loaded.saved);
    }
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
      [...this.pendingSaves.keys()].map((partition) => {
        const [workspaceId = "", ownerId = ""] = partition.split("/");
        return this.locks.run(partition, () => this.save(workspaceId, ownerId));
      }),
    );
  }

  /**
   * Drops the least recently used partitions while those in memory are over MAX_LOADED_PARTITIONS
   * or their estimated bytes over the budget; never `inUse`, the one this call is using.
   */
  private dropBeyondBudget(inUse: string): void {
    let count = 0;
    let bytes = 0;
    for (const [partition, { index }] of this.loaded) {
      if (this.dropping.has(partition)) continue;
      count += 1;
      bytes += index.estimatedBytes;
    }
    for (const [partition, { index }] of this.loaded) {
      if (count <= MAX_LOADED_PARTITIONS && bytes <= this.maxLoadedBytes) return;
      if (partition === inUse || this.dropping.has(partition)) continue;
      count -= 1;
      bytes -= index.estimatedBytes;
      void this.drop(partition, () => true);
    }
  }

  /** Saves and drops the partitions unused for the idle time; also run by a timer while any is loaded. */
  async sweep(now = this.clock()): Promise<void> {
    const drops: Promise<void>[] = [];
    for (const [partition, { lastUsed }] of this.loaded) {
      if (now - lastUsed >= this.idleMs && !this.dropping.has(partition)) {
        // Checked again under the lock: a use queued before the drop keeps it.
        drops.push(this.drop(partition, (loaded) => now - loaded.lastUsed >= this.idleMs));
      }
    }
    await Promise.all(drops);
  }

  private armSweep(): void {
    if (this.stopped || this.cancelSweep) return;
    this.cancelSweep = this.timers.after(Math.max(1_000, Math.floor(this.idleMs / 2)), () => {
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
    this.dropping.add(partition);
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
          if (this.pendingSaves.has(partition) || otherNumbering) await this.save(workspaceId, ownerId);
        } finally {
          this.forget(partition);
          this.pendingSaves.get(partition)?.();
          this.pendingSaves.delete(partition);
        }
      })
      .catch((error: unknown) => this.log.warn({ err: error, workspaceId }, "conversation index not saved"))
      .finally(() => this.dropping.delete(partition));
  }

  /**
   * Drops the partition's index from memory, remembering when it numbered events past its last
   * snapshot (a save failed, now or before): those numbers are lost with it.
   */
  private forget(partition: string): void {
    const loaded = this.loaded.get(partition);
    this.loaded.delete(partition);
    if (loaded && loaded.saved !== loaded.index.numbering) this.resumable.droppedUnsaved(partition);
  }

  /** The index the snapshot holds; undefined when there is none or it cannot be trusted. */
  private async readSnapshot(ownerDir: string): Promise<SnapshotRead | undefined> {
    try {
      return await readSnapshot(join(ownerDir, SNAPSHOT_FILE), this.limits);
    } catch (error) {
      this.log.warn({ err: error }, "conversation index snapshot unreadable; rebuilding");
      return undefined;
    }
  }
}

/** The conversation ids whose logs an owner folder holds; none when it does not exist. */
async function logIds(ownerDir: string): Promise<string[]> {
  return (await namesIn(ownerDir)).flatMap((name) => conversationIdOfFile(name) ?? []);
}

function key(workspaceId: string, ownerId: string): string {
  return `${workspaceId}/${ownerId}`;
}
