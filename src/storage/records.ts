import { mkdir, readdir, rm } from "node:fs/promises";
import { readJsonIfExists, TEMP_PREFIX, writeJsonAtomic } from "./atomic.ts";
import type { InstanceCollection, StorageLayout } from "./paths.ts";

/**
 * One instance-wide collection of small JSON records (sessions, OAuth clients, codes…),
 * a file per record. Writes are atomic; a reader sees a whole record or none. Callers
 * that read-modify-write one record serialise themselves (storage/keyed-lock.ts).
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
    await mkdir(this.layout.collectionDir(this.collection), { recursive: true, mode: 0o700 });
    await writeJsonAtomic(path, record);
  }

  async delete(id: string): Promise<void> {
    await rm(this.layout.collectionFile(this.collection, id), { force: true });
  }

  /** The ids of every stored record (writers' temp files skipped). */
  async ids(): Promise<string[]> {
    let entries: string[];
    try {
      entries = await readdir(this.layout.collectionDir(this.collection));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw error;
    }
    return entries
      .filter((name) => !name.startsWith(TEMP_PREFIX) && name.endsWith(".json"))
      .map((name) => name.slice(0, -".json".length));
  }
}
