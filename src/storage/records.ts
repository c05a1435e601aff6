import { rm } from "node:fs/promises";
import { landedIsDone, readJsonIfExists, TEMP_PREFIX, WrittenNotFlushed, writeJsonAtomic } from "./atomic.ts";
import { exists, makeFolderPathIfMissing, namesIn } from "./folders.ts";
import { removeFileSynced } from "./owned-records.ts";
import type { InstanceCollection, StorageLayout } from "./paths.ts";

/**
 * One instance-wide collection of small JSON records (sessions, OAuth clients, codes…),
 * a file per record. Writes are atomic; a reader sees a whole record or none. A put or a delete
 * is flushed in the collection's folder before it returns, and a folder a put makes in its
 * parent, so neither is undone by a power loss: a logged-out session or a spent code does not
 * come back (adr/0024). Callers serialise their writes to one record (storage/keyed-lock.ts):
 * a put learns whether it creates or overwrites by looking first.
 */
export class JsonRecords<T> {
  constructor(
    private readonly layout: StorageLayout,
    private readonly collection: InstanceCollection,
  ) {}

  async get(id: string): Promise<T | undefined> {
    return (await readJsonIfExists(this.layout.collectionFile(this.collection, id))) as T | undefined;
  }

  /**
   * A put that lands and then fails its folder's flush is, as every store that indexes these
   * records needs it, either stored and indexed or not stored at all (ADR 0166, amended): an
   * overwrite, whose old bytes are gone, returns as done; a create is removed again and throws the
   * flush's own error, so an error means "not stored" (as adr/0112). Thrown through, the indexes
   * (invitations, grants, signing keys, credentials' key versions) missed a record every restart
   * loaded (test/unit/storage/records-unflushed-put.test.ts).
   */
  async put(id: string, record: T): Promise<void> {
    const path = this.layout.collectionFile(this.collection, id);
    await makeFolderPathIfMissing(this.layout.collectionDir(this.collection));
    const overwrites = await exists(path);
    try {
      await writeJsonAtomic(path, record);
    } catch (error) {
      if (!(error instanceof WrittenNotFlushed)) throw error;
      if (overwrites) return;
      await rm(path, { force: true });
      throw error.cause;
    }
  }

  /** Landed, a removal is done, its flush's failure or not: the file is gone for every reader (ADR 0166). */
  async delete(id: string): Promise<void> {
    await removeFileSynced(this.layout.collectionFile(this.collection, id)).catch(landedIsDone);
  }

  /** The ids of every stored record (writers' temp files skipped). */
  async ids(): Promise<string[]> {
    const entries = await namesIn(this.layout.collectionDir(this.collection));
    return entries
      .filter((name) => !name.startsWith(TEMP_PREFIX) && name.endsWith(".json"))
      .map((name) => name.slice(0, -".json".length));
  }
}
