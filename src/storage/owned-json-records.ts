import { dirname, join } from "node:path";
import { isPrincipalId, isRecordId, isWorkspaceId } from "../ids.ts";
import { landedIsDone, readJsonIfExists, writeJsonAtomic } from "./atomic.ts";
import { mapBounded } from "./bounded.ts";
import { createFileExclusive } from "./exclusive.ts";
import { namesIn } from "./folders.ts";
import { KeyedLock } from "./keyed-lock.ts";
import { makeInPartition, RecordExists, type Removal, removeFileSynced } from "./owned-records.ts";
import { InvalidPathSegment } from "./paths.ts";

const RECORDS_IN_FLIGHT = 16;

/** Where one owner's records of one workspace live: `<ws>/<partition>/<owner>` (storage/paths.ts). */
export type OwnerDirOf = (workspaceId: string, ownerId: string) => string;

/**
 * Records that are one JSON file each, at `<ownerDir>/<id>.json`. Every write is atomic (a
 * reader sees the whole record or none) and flushed in its folder; writes to one record run one
 * at a time, so a read-modify-write never loses a concurrent one. The workspace, owner and record
 * id are checked against their grammar before any path is built or disk touched. Keep one
 * instance per partition: the per-record lock is this instance's.
 */
export class OwnedRecords<T> {
  private readonly locks = new KeyedLock();

  constructor(private readonly ownerDirOf: OwnerDirOf) {}

  /**
   * Stores a new record; `RecordExists` if the id is taken (exclusive: of racing creates one wins).
   * Here and in `update` and `delete`, `beforeCommit` is asked under the record's lock just before
   * the one step that makes the write seen (a create's link, an update's rename, a delete's unlink):
   * by throwing it refuses the write, which then leaves nothing of itself, and its error is thrown
   * (a writer's caller whose access ended, adr/0154).
   */
  async create(
    workspaceId: string,
    ownerId: string,
    id: string,
    record: T,
    beforeCommit?: () => void,
  ): Promise<T> {
    const path = this.recordPath(workspaceId, ownerId, id);
    await makeInPartition(dirname(path), workspaceId);
    return this.locks.run(path, async () => {
      if (!(await createFileExclusive(path, toJsonText(record), beforeCommit))) throw new RecordExists(id);
      return record;
    });
  }

  /** The record, or `undefined` when there is none. */
  async get(workspaceId: string, ownerId: string, id: string): Promise<T | undefined> {
    return (await readJsonIfExists(this.recordPath(workspaceId, ownerId, id))) as T | undefined;
  }

  /**
   * Rereads the record, applies `change` and replaces it atomically, under the record's lock;
   * returns the new record, or `undefined` when there is none (nothing is written). One whose
   * rename landed and whose flush then failed is done: thrown, a task's update was 500 while memory
   * kept the old task and a restart served the new (ADR 0166; tasks-unflushed-write.test.ts).
   */
  async update(
    workspaceId: string,
    ownerId: string,
    id: string,
    change: (current: T) => T | Promise<T>,
    beforeCommit?: () => void,
  ): Promise<T | undefined> {
    const path = this.recordPath(workspaceId, ownerId, id);
    return this.locks.run(path, async () => {
      const current = (await readJsonIfExists(path)) as T | undefined;
      if (current === undefined) return undefined;
      const next = await change(current);
      await writeJsonAtomic(path, next, beforeCommit).catch(landedIsDone);
      return next;
    });
  }

  /** Removes the record (one unlink, flushed); `"gone"` when there was none. Landed, it is done, as `update`. */
  async delete(
    workspaceId: string,
    ownerId: string,
    id: string,
    beforeCommit?: () => void,
  ): Promise<Removal> {
    const path = this.recordPath(workspaceId, ownerId, id);
    return this.locks.run(path, async () => {
      beforeCommit?.();
      return removeFileSynced(path).catch((error: unknown) => {
        landedIsDone(error);
        return "removed" as const;
      });
    });
  }

  /** The ids of the owner's records, in no particular order; temp files and strays skipped. */
  async ids(workspaceId: string, ownerId: string): Promise<string[]> {
    const names = await namesIn(this.ownerDir(workspaceId, ownerId));
    return names.flatMap((name) => {
      const id = name.endsWith(".json") ? name.slice(0, -".json".length) : "";
      return isRecordId(id) ? [id] : [];
    });
  }

  /** The owner's records, in no particular order; one deleted while listing is left out. */
  async list(workspaceId: string, ownerId: string): Promise<T[]> {
    const ids = await this.ids(workspaceId, ownerId);
    const records = await mapBounded(ids, RECORDS_IN_FLIGHT, (id) => this.get(workspaceId, ownerId, id));
    return records.filter((record): record is T => record !== undefined);
  }

  private ownerDir(workspaceId: string, ownerId: string): string {
    checkSegment("workspace id", workspaceId, isWorkspaceId);
    checkSegment("owner", ownerId, isPrincipalId);
    return this.ownerDirOf(workspaceId, ownerId);
  }

  private recordPath(workspaceId: string, ownerId: string, id: string): string {
    checkSegment("record id", id, isRecordId);
    return join(this.ownerDir(workspaceId, ownerId), `${id}.json`);
  }
}

function checkSegment(kind: string, value: string, valid: (value: string) => boolean): void {
  if (typeof value !== "string" || !valid(value)) throw new InvalidPathSegment(kind, String(value));
}

function toJsonText(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}
