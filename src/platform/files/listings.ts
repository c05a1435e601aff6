import { readdir } from "node:fs/promises";
import { InvalidInput } from "../../errors.ts";
import { mapBounded } from "../../storage/bounded.ts";
import { KeyedLock } from "../../storage/keyed-lock.ts";
import type { PartitionPaths } from "../../storage/paths.ts";
import { firstAfter as firstAfterIn } from "../list-position.ts";
import { compareNewestFirst, decodeCursor, encodeCursor, type ListPosition } from "./cursor.ts";
import { type FileMeta, isFileId } from "./model.ts";

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;
/** Listings kept in memory at once; the least recently used is dropped and rebuilt on demand. */
const MAX_CACHED_LISTINGS = 1000;
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

/** What a writer did to one partition, so its cached listing follows without a reread. */
export type PartitionChange = { added: FileMeta } | { removed: string };

/**
 * Each owner partition's files, sorted newest first, read from meta.json once on the first
 * list and then kept by the writers: a list call reads no file (issue 10, Reliability 5). A
 * listing is built lazily, not at boot, because only a list needs it (adr/0025). Building and
 * changing one partition run under its lock, so a write during a build is never lost.
 */
export class FileListings {
  private readonly cached = new Map<string, FileMeta[]>();
  private readonly locks = new KeyedLock();

  constructor(
    private readonly storage: PartitionPaths,
    private readonly readMeta: (workspaceId: string, ownerId: string, fileId: string) => Promise<FileMeta>,
  ) {}

  async page(workspaceId: string, ownerId: string, request: PageRequest): Promise<FilePage> {
    const limit = checkLimit(request.limit);
    const after = request.cursor === undefined ? undefined : decodeCursor(request.cursor);
    const key = `${workspaceId}/${ownerId}`;
    const listing = await this.locks.run(key, () => this.listing(key, workspaceId, ownerId));
    const start = after === undefined ? 0 : firstAfter(listing, after);
    const files = listing.slice(start, start + limit);
    const last = files[files.length - 1];
    return start + limit < listing.length && last ? { files, nextCursor: encodeCursor(last) } : { files };
  }

  /** Runs a writer's rename under the partition's lock and applies it to the cached listing. */
  async change(workspaceId: string, ownerId: string, work: () => Promise<PartitionChange>): Promise<void> {
    const key = `${workspaceId}/${ownerId}`;
    await this.locks.run(key, async () => {
      const change = await work();
      const listing = this.cached.get(key);
      if (!listing) return;
      if ("added" in change) listing.splice(firstAfter(listing, change.added), 0, change.added);
      else {
        const index = listing.findIndex((meta) => meta.id === change.removed);
        if (index >= 0) listing.splice(index, 1);
      }
    });
  }

  private async listing(key: string, workspaceId: string, ownerId: string): Promise<FileMeta[]> {
    let listing = this.cached.get(key);
    if (listing) {
      // Most recently used last, so the first key is the one to drop.
      this.cached.delete(key);
    } else {
      listing = await this.build(workspaceId, ownerId);
    }
    this.cached.set(key, listing);
    if (this.cached.size > MAX_CACHED_LISTINGS) {
      const oldest = this.cached.keys().next().value;
      if (oldest !== undefined) this.cached.delete(oldest);
    }
    return listing;
  }

  private async build(workspaceId: string, ownerId: string): Promise<FileMeta[]> {
    let entries: string[];
    try {
      entries = await readdir(this.storage.ownerDir(workspaceId, ownerId));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw error;
    }
    const metas = await mapBounded(entries.filter(isFileId), METAS_IN_FLIGHT, (id) =>
      this.readMeta(workspaceId, ownerId, id).catch(() => undefined),
    );
    return metas.filter((meta): meta is FileMeta => meta !== undefined).sort(compareNewestFirst);
  }
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
