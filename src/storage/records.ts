import { landedIsDone, readJsonIfExists, storedJsonText, TEMP_PREFIX, writeFileAtomic } from "./atomic.ts";
import { createFileExclusive } from "./exclusive.ts";
import { exists, makeFolderPathIfMissing, namesIn } from "./folders.ts";
import { removeFileSynced } from "./owned-records.ts";
import type { InstanceCollection, StorageLayout } from "./paths.ts";

/**
 * One instance-wide collection of small JSON records (sessions, OAuth clients, codes…),
 * a file per record. Writes are atomic; a reader sees a whole record or none. A put or a delete
 * is flushed in the collection's folder before it returns, and a folder a put makes in its
 * parent, so neither is undone by a power loss: a logged-out session or a spent code does not
 * come back (adr/0024). Callers serialise their read-modify-writes to one record
 * (storage/keyed-lock.ts); two puts of one id that race still leave one of them stored, never
 * neither.
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
   *
   * The create is exclusive (a link, which fails when the file is there) and its undo removes only
   * its own file: decided by a look before the write, a put that took a record another put had
   * just stored for "new" removed it, stored and answered as done, with its own
   * (test/unit/storage/records-racing-puts.test.ts).
   */
  async put(id: string, record: T): Promise<void> {
    const path = this.layout.collectionFile(this.collection, id);
    await makeFolderPathIfMissing(this.layout.collectionDir(this.collection));
    const text = storedJsonText(record);
    // The look spares an overwrite a second write of its bytes; the link, not the look, decides.
    if (!(await exists(path)) && (await createFileExclusive(path, text))) return;
    await writeFileAtomic(path, text).catch(landedIsDone);
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
