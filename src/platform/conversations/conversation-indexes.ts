import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import type { Timers } from "../../kernel/timers.ts";
import type { Logger } from "../../log.ts";
import { mapBounded } from "../../storage/bounded.ts";
import { KeyedLock } from "../../storage/keyed-lock.ts";
import type { PartitionPaths } from "../../storage/paths.ts";
import { readSnapshot, SNAPSHOT_FILE, writeSnapshot } from "./index-snapshot.ts";
import { endsLineAt, readLog } from "./log-file.ts";
import { type ConversationEvent, conversationIdOfFile, LOG_SUFFIX } from "./model.ts";
import { INDEX_LIMITS, PartitionIndex } from "./partition-index.ts";

export { SNAPSHOT_FILE } from "./index-snapshot.ts";
/**
 * A changed index is written this long after its first unsaved change, with every change since,
 * per started thousand conversations: a save costs time in proportion to the index (about 0.4 s
 * of this thread for 10,000 conversations, bench/conversations.ts), so a large one is saved less
 * often and a busy partition never spends more than a few percent of its time saving.
 */
export const SNAPSHOT_DELAY_MS = 5_000;
const CONVERSATIONS_PER_DELAY_STEP = 1000;
/** Partitions whose index is kept in memory; the least recently used is saved and dropped. */
const MAX_LOADED_PARTITIONS = 100;
const LOGS_IN_FLIGHT = 16;

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
 * Every change to one partition's index runs under its lock, in order.
 */
export class ConversationIndexes {
  private readonly loaded = new Map<string, PartitionIndex>();
  private readonly locks = new KeyedLock();
  private readonly pendingSaves = new Map<string, () => void>();
  private stopped = false;

  constructor(
    private readonly storage: PartitionPaths,
    private readonly timers: Timers,
    private readonly log: Logger,
  ) {}

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
      this.loaded.delete(key(workspaceId, ownerId));
      this.log.warn({ err: error, workspaceId }, "conversation index dropped after a failed update");
    }
  }

  private async load(workspaceId: string, ownerId: string): Promise<IndexView> {
    const partition = key(workspaceId, ownerId);
    const known = this.loaded.get(partition);
    if (known) {
      // Most recently used last, so the first key is the one to drop.
      this.loaded.delete(partition);
      this.loaded.set(partition, known);
      return { index: known, logsRead: 0 };
    }
    const ownerDir = this.storage.ownerDir(workspaceId, ownerId);
    const snapshot = await this.readSnapshot(ownerDir);
    const index = snapshot ?? new PartitionIndex(INDEX_LIMITS);
    let logsRead = 0;
    let stale = snapshot === undefined;
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
      if (covered !== undefined && covered > size) index.remove(id);
      stale = true;
      logsRead += 1;
      await this.catchUp(index, workspaceId, ownerId, id);
    });
    const present = new Set(onDisk);
    for (const id of index.ids()) {
      if (present.has(id)) continue;
      index.remove(id);
      stale = true;
    }
    this.loaded.set(partition, index);
    if (stale) this.changed(workspaceId, ownerId);
    this.evictBeyondLimit();
    return { index, logsRead };
  }

  /**
   * Reads the log from where the index stops and applies what it finds; a log gone is removed,
   * and one whose lines no longer end where the index stops (edited on disk) is indexed again
   * from its start.
   */
  private async catchUp(
    index: PartitionIndex,
    workspaceId: string,
    ownerId: string,
    id: string,
  ): Promise<void> {
    const path = join(this.storage.ownerDir(workspaceId, ownerId), `${id}${LOG_SUFFIX}`);
    const covered = index.bytesOf(id) ?? 0;
    try {
      const rewritten = covered > 0 && !(await endsLineAt(path, covered));
      if (rewritten) index.remove(id);
      const read = await readLog(path, rewritten ? 0 : covered);
      index.apply(id, read.events, read.end);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      index.remove(id);
    }
  }

  /** Arms one save of the partition's snapshot for every change made before it runs. */
  private changed(workspaceId: string, ownerId: string): void {
    const partition = key(workspaceId, ownerId);
    // After a stop nothing is armed: a change made while the last requests drain is read from
    // its log at the next start, and no timer outlives the instance.
    if (this.stopped || this.pendingSaves.has(partition)) return;
    const size = this.loaded.get(partition)?.size ?? 0;
    const delayMs = SNAPSHOT_DELAY_MS * Math.max(1, Math.ceil(size / CONVERSATIONS_PER_DELAY_STEP));
    const cancel = this.timers.after(delayMs, () => {
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
    const index = this.loaded.get(partition);
    if (!index) return;
    try {
      await writeSnapshot(join(this.storage.ownerDir(workspaceId, ownerId), SNAPSHOT_FILE), index);
    } catch (error) {
      // An owner with no conversation folder here has nothing to save; a removed workspace neither.
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
  }

  /** A graceful stop: every unsaved index is saved now, so the next start reads no log. */
  async stop(): Promise<void> {
    this.stopped = true;
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

  private evictBeyondLimit(): void {
    while (this.loaded.size > MAX_LOADED_PARTITIONS) {
      const oldest = this.loaded.keys().next().value;
      if (oldest === undefined) return;
      const [workspaceId = "", ownerId = ""] = oldest.split("/");
      // Saved before it is dropped, so the next load reads the snapshot, not every log.
      if (this.pendingSaves.has(oldest)) {
        void this.locks
          .run(oldest, async () => {
            await this.save(workspaceId, ownerId);
            this.loaded.delete(oldest);
          })
          .catch((error: unknown) =>
            this.log.warn({ err: error, workspaceId }, "conversation index not saved"),
          );
        return;
      }
      this.loaded.delete(oldest);
    }
  }

  /** The index the snapshot holds; undefined when there is none or it cannot be trusted. */
  private async readSnapshot(ownerDir: string): Promise<PartitionIndex | undefined> {
    try {
      return await readSnapshot(join(ownerDir, SNAPSHOT_FILE), INDEX_LIMITS);
    } catch (error) {
      this.log.warn({ err: error }, "conversation index snapshot unreadable; rebuilding");
      return undefined;
    }
  }
}

/** The conversation ids whose logs an owner folder holds; none when it does not exist. */
async function logIds(ownerDir: string): Promise<string[]> {
  try {
    return (await readdir(ownerDir)).flatMap((name) => conversationIdOfFile(name) ?? []);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
}

function key(workspaceId: string, ownerId: string): string {
  return `${workspaceId}/${ownerId}`;
}
