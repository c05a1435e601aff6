import { landedIsDone } from "./atomic.ts";

/**
 * Values read from disk, by key, kept for the process whose writers move them (adr/0025): a cache
 * filled only by a read no write overtook (ADR 0162).
 *
 * A read runs without the key's lock, so a write can land between the read's look at the file and
 * its return; kept then, the value the write replaced would be served and, as a read-modify-write's
 * base, written back over it. So a read keeps what it found only if no write or delete of its key
 * ended while it was under way: each write, landed or failed (one that failed may still have
 * reached the file), overtakes the reads under way on its key. Nothing is kept per key beyond its
 * value and the reads under way on it. A write that throws leaves memory what the disk holds: the
 * new value when the throw says it landed (`WrittenNotFlushed`), else nothing, so the next read
 * goes to the disk (ADR 0166).
 */
export class DiskCache<V> {
  private readonly values = new Map<string, V>();
  /** The reads under way on each key; a write of the key drops the set, and with it their right to fill. */
  private readonly reading = new Map<string, Set<symbol>>();

  /** The kept value, if any. */
  get(key: string): V | undefined {
    return this.values.get(key);
  }

  /**
   * Reads with `load` and answers what it found; keeps it (when found) unless a write or delete of
   * `key` ended while it was under way. Under the key's lock or not, as the caller likes.
   */
  async read<R extends V | undefined>(key: string, load: () => Promise<R>): Promise<R> {
    const read = Symbol(key);
    const underWay = this.reading.get(key) ?? new Set<symbol>();
    this.reading.set(key, underWay);
    underWay.add(read);
    try {
      const value = await load();
      if (value !== undefined && this.reading.get(key)?.has(read)) this.values.set(key, value as V);
      return value;
    } finally {
      underWay.delete(read);
      if (underWay.size === 0 && this.reading.get(key) === underWay) this.reading.delete(key);
    }
  }

  /**
   * A writer's change of `key` to `value`, under its lock: `write` puts it on disk, and it is kept
   * once that returns. One that lands and then fails its folder's flush (`WrittenNotFlushed`) is
   * kept too, and is done: not thrown, as the file holds it and the old value is gone (ADR 0166).
   * Any other throw may or may not have reached the file: nothing is kept, and it is thrown. Kept
   * as it was, the old value was served after its replacement had landed, until a restart read
   * the new (test/unit/storage/disk-cache.test.ts). Whatever `write` does, the reads under way on
   * `key` keep nothing.
   */
  async write(key: string, value: V, write: () => Promise<unknown>): Promise<void> {
    try {
      await write().catch(landedIsDone);
    } catch (error) {
      this.values.delete(key);
      throw error;
    } finally {
      this.reading.delete(key);
    }
    this.values.set(key, value);
  }

  /** A writer's removal of `key` (or letting it go): nothing is kept, nor by a read under way. */
  delete(key: string): void {
    this.values.delete(key);
    this.reading.delete(key);
  }
}
