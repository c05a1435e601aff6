import { landedIsDone, readJsonIfExists, TEMP_PREFIX, writeJsonAtomic } from "./atomic.ts";
import { makeFolderPathIfMissing, namesIn } from "./folders.ts";
import { removeFileSynced } from "./owned-records.ts";
import type { InstanceCollection, StorageLayout } from "./paths.ts";

/**
 * One instance-wide collection of small JSON records (sessions, OAuth clients, codes…),
 * a file per record. Writes are atomic; a reader sees a whole record or none. A put or a delete
 * is flushed in the collection's folder before it returns, and a folder a put makes in its
 * parent, so neither is undone by a power loss: a logged-out session or a spent code does not
 * come back (adr/0024). Callers that read-modify-write one record serialise themselves
 * (storage/keyed-lock.ts).
 */
export class JsonRecords<T> {
  constructor(
    private readonly layout: StorageLayout,
    private readonly collection: InstanceCollection,
  ) {}

  async get(id: string): Promise<T | undefined> {
    return (await readJsonIfExists(this.layout.collectionFile(this.collection, id))) as T | undefined;
  }

  async put(id: string, record: T): Promise<void> {
    const path = this.layout.collectionFile(this.collection, id);
    await makeFolderPathIfMissing(this.layout.collectionDir(this.collection));
    await writeJsonAtomic(path, record);
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
