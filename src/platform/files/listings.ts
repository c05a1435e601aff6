import { stat } from "node:fs/promises";
import { join } from "node:path";
import { InvalidInput } from "../../errors.ts";
import { type Clock, isWithin, systemClock } from "../../kernel/clock.ts";
import { systemTimers, type Timers } from "../../kernel/timers.ts";
import type { Logger } from "../../log.ts";
import { IdleCache } from "../../sources/idle-cache.ts";
import { CorruptJson } from "../../storage/atomic.ts";
import { mapBounded } from "../../storage/bounded.ts";
import { namesIn } from "../../storage/folders.ts";
import { KeyedLock } from "../../storage/keyed-lock.ts";
import type { PartitionPaths } from "../../storage/paths.ts";
import { firstAfter as firstAfterIn } from "../list-position.ts";
import { compareNewestFirst, decodeCursor, encodeCursor, type ListPosition } from "./cursor.ts";
import { type FileMeta, isFileId } from "./model.ts";
import { MalformedMeta } from "./stored-meta.ts";

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;
/**
 * How long a workspace's index is kept unused before it is dropped: the idle period of a
 * workspace's source registry (IDLE_EVICT_MS in src/server.ts), so the two go together.
 */
export const FILE_INDEX_IDLE_MS = 10 * 60 * 1000;
/**
 * How often, at most, a partition's folder is looked at for an operator's edit on disk: a file
 * folder added or removed behind Atrium's back is seen within this long (adr/0050).
 */
export const DISK_CHECK_MS = 1000;
const METAS_IN_FLIGHT = 16;

export interface PageRequest {
  cursor?: string | undefined;
  limit?: number | undefined;
}

export interface FilePage {
  files: FileMeta[];
  /** Present when more files follow; pass it back as `cursor` for the next page. */
  nextCursor?: string;
}

/**
 * What a writer did to one partition, so its index follows without a reread; `undefined` when
 * it changed only its own temp entries (a staging folder made or removed, a deleted file's folder
 * removed once renamed aside), which move the folder's mtime but add or remove no file.
 */
export type PartitionChange = { added: FileMeta } | { removed: string } | undefined;

/** One owner partition's files: sorted newest first, and by id. */
interface PartitionIndex {
  sorted: FileMeta[];
  byId: Map<string, FileMeta>;
  /** File folders whose meta.json could not be read at the build: left out of lists. */
  unreadable: Set<string>;
  /** The owner folder's mtime when the index last matched it ("absent" when there was none). */
  folderStamp: string;
  /**
   * Whether `folderStamp` was taken just after a change: an edit on disk in the same timestamp
   * tick (a kernel without fine-grained timestamps keeps one for a few ms) leaves the mtime as it
   * is, so the next look compares the folder's names with the index instead of trusting it.
   */
  stampedNow: boolean;
  /** When the folder was last compared with `folderStamp`. */
  checkedAt: number;
}

/**
 * The file metadata index: each owner partition's `meta.json` files, read once on first use
 * and then kept by the store's writers, so a list, an info or a download reads no metadata from
 * disk (adr/0025, adr/0050). Held per workspace and dropped with it when idle
 * (FILE_INDEX_IDLE_MS). An operator's edit on disk is noticed by the owner folder's mtime,
 * compared at most every DISK_CHECK_MS, and by its names the first time after the index took the
 * mtime as its own. Building and changing one partition run under its lock, so a write during a
 * build is never lost.
 */
export class FileListings {
  private readonly workspaces: IdleCache<Map<string, PartitionIndex>>;
  private readonly locks = new KeyedLock();

  /** The meta.json paths already logged as unreadable: each is logged once, not at every rebuild. */
  private readonly logged = new Set<string>();

  constructor(
    private readonly storage: PartitionPaths,
    private readonly readMeta: (workspaceId: string, ownerId: string, fileId: string) => Promise<FileMeta>,
    private readonly clock: Clock = systemClock,
    /** Where a file left out of the lists is said; the app's log (files/store.ts passes it). */
    private readonly log?: Pick<Logger, "warn">,
    timers: Timers = systemTimers,
  ) {
    this.workspaces = new IdleCache(
      async () => new Map<string, PartitionIndex>(),
      async () => undefined,
      FILE_INDEX_IDLE_MS,
      { clock, timers },
    );
  }

  async page(workspaceId: string, ownerId: string, request: PageRequest): Promise<FilePage> {
    const limit = checkLimit(request.limit);
    const after = request.cursor === undefined ? undefined : decodeCursor(request.cursor);
    const { sorted } = await this.partition(workspaceId, ownerId);
    const start = after === undefined ? 0 : firstAfter(sorted, after);
    const files = sorted.slice(start, start + limit);
    const last = files[files.length - 1];
    return start + limit < sorted.length && last ? { files, nextCursor: encodeCursor(last) } : { files };
  }

  /** One file's metadata from the index, or undefined when the partition holds no such file. */
  async get(workspaceId: string, ownerId: string, fileId: string): Promise<FileMeta | undefined> {
    const index = await this.partition(workspaceId, ownerId);
    const meta = index.byId.get(fileId);
    if (meta || !index.unreadable.has(fileId)) return meta;
    // A folder whose meta.json could not be read is read again, so its fault reaches the caller
    // as before the index (test/integration/unexpected-errors.test.ts) and a repair is seen.
    let read: FileMeta;
    try {
      read = await this.readMeta(workspaceId, ownerId, fileId);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      index.unreadable.delete(fileId);
      return undefined;
    }
    await this.change(workspaceId, ownerId, async () => ({ added: read }));
    return read;
  }

  /**
   * Runs one of a writer's changes to the partition's folder under the partition's lock and
   * applies it to the index, if built. Every change Atrium makes to an owner folder goes through
   * here, so the mtime it leaves is the index's own and only an edit on disk from outside
   * Atrium rebuilds the partition (test/unit/platform/files/file-index.test.ts).
   */
  async change(workspaceId: string, ownerId: string, work: () => Promise<PartitionChange>): Promise<void> {
    await this.locks.run(partitionKey(workspaceId, ownerId), async () => {
      const index = (await this.workspaces.peek(workspaceId))?.get(ownerId);
      const before = index && (await this.folderStamp(workspaceId, ownerId));
      const change = await work();
      if (!index) return;
      if (before !== index.folderStamp) {
        // Edited on disk since the index last looked: rebuilt on the next read instead.
        (await this.workspaces.peek(workspaceId))?.delete(ownerId);
        return;
      }
      if (change && "added" in change && !index.byId.has(change.added.id)) {
        const meta = Object.freeze(change.added);
        index.unreadable.delete(meta.id);
        index.sorted.splice(firstAfter(index.sorted, meta), 0, meta);
        index.byId.set(meta.id, meta);
      } else if (change && "removed" in change && index.byId.delete(change.removed)) {
        const at = index.sorted.findIndex((meta) => meta.id === change.removed);
        if (at >= 0) index.sorted.splice(at, 1);
      }
      // The change moved the folder's mtime: taken as the index's own, not an operator's edit.
      // One in this same timestamp tick may not move it again: the next look compares names.
      index.folderStamp = await this.folderStamp(workspaceId, ownerId);
      index.stampedNow = true;
    });
  }

  /** Workspaces whose index is in memory now. */
  get size(): number {
    return this.workspaces.size;
  }

  /** Drops the indexes unused for FILE_INDEX_IDLE_MS (also done on a timer). */
  sweep(now?: number): Promise<void> {
    return this.workspaces.sweep(now);
  }

  /** A graceful stop: the idle timer ends, and the indexes are dropped. */
  close(): Promise<void> {
    return this.workspaces.close();
  }

  private partition(workspaceId: string, ownerId: string): Promise<PartitionIndex> {
    return this.workspaces.use(workspaceId, async (partitions) => {
      const index = partitions.get(ownerId);
      const now = this.clock();
      if (index && isWithin(now, index.checkedAt, DISK_CHECK_MS)) return index;
      return this.locks.run(partitionKey(workspaceId, ownerId), async () => {
        const current = partitions.get(ownerId);
        const stamp = await this.folderStamp(workspaceId, ownerId);
        const same =
          current?.folderStamp === stamp &&
          (!current.stampedNow || (await this.holdsSameFiles(workspaceId, ownerId, current)));
        if (current && same) {
          current.stampedNow = false;
          current.checkedAt = now;
          return current;
        }
        const built = await this.build(workspaceId, ownerId, stamp, now);
        partitions.set(ownerId, built);
        return built;
      });
    });
  }

  /** The owner folder's mtime to the nanosecond, or "absent". */
  private async folderStamp(workspaceId: string, ownerId: string): Promise<string> {
    try {
      return String((await stat(this.storage.ownerDir(workspaceId, ownerId), { bigint: true })).mtimeNs);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return "absent";
      throw error;
    }
  }

  /** The ids of the file folders in the owner folder: its names, no meta.json read. */
  private async fileIds(workspaceId: string, ownerId: string): Promise<string[]> {
    return (await namesIn(this.storage.ownerDir(workspaceId, ownerId))).filter(isFileId);
  }

  /** Whether the owner folder holds exactly the files the index knows, read or unreadable. */
  private async holdsSameFiles(
    workspaceId: string,
    ownerId: string,
    index: PartitionIndex,
  ): Promise<boolean> {
    const ids = await this.fileIds(workspaceId, ownerId);
    const known = (id: string) => index.byId.has(id) || index.unreadable.has(id);
    return ids.length === index.byId.size + index.unreadable.size && ids.every(known);
  }

  /**
   * A file whose meta.json cannot be read is left out of every list: said once per file, as a
   * connection left out is (connections/connection-view.ts), or it would vanish without a word.
   * One gone meanwhile (deleted on disk while the index was built) is no fault and is not said.
   */
  private warnUnreadable(workspaceId: string, ownerId: string, fileId: string, error: unknown): void {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    const path = join(this.storage.recordDir(workspaceId, ownerId, fileId), "meta.json");
    if (this.logged.has(path)) return;
    this.logged.add(path);
    // Where it stops being JSON, which field is wrong, or the filesystem's code: never the error's
    // message, which for a parse error can quote the file's text (ADR 0076).
    const reason =
      error instanceof CorruptJson
        ? error.where
        : error instanceof MalformedMeta
          ? error.problem
          : ((error as NodeJS.ErrnoException).code ?? "unreadable");
    this.log?.warn(
      { workspaceId, ownerId, fileId, path, reason },
      "file left out of listings: its meta.json cannot be read as a file's metadata. Restore it from a backup, or move the file's folder out of the data root.",
    );
  }

  private async build(
    workspaceId: string,
    ownerId: string,
    folderStamp: string,
    checkedAt: number,
  ): Promise<PartitionIndex> {
    const unreadable = new Set<string>();
    const metas = await mapBounded(await this.fileIds(workspaceId, ownerId), METAS_IN_FLIGHT, (id) =>
      this.readMeta(workspaceId, ownerId, id).catch((error: unknown) => {
        unreadable.add(id);
        this.warnUnreadable(workspaceId, ownerId, id, error);
        return undefined;
      }),
    );
    const sorted = metas
      .filter((meta): meta is FileMeta => meta !== undefined)
      .map((meta) => Object.freeze(meta))
      .sort(compareNewestFirst);
    return {
      sorted,
      byId: new Map(sorted.map((meta) => [meta.id, meta])),
      unreadable,
      folderStamp,
      stampedNow: true,
      checkedAt,
    };
  }
}

function partitionKey(workspaceId: string, ownerId: string): string {
  return `${workspaceId}/${ownerId}`;
}

/** The index of the first entry that sorts after `position`. */
function firstAfter(listing: readonly FileMeta[], position: ListPosition): number {
  return firstAfterIn(listing, position, compareNewestFirst);
}

function checkLimit(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) {
    throw new InvalidInput(`limit is a whole number from 1 to ${MAX_PAGE_SIZE}.`);
  }
  return limit;
}
