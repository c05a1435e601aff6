/**
 * Serialises async work per key: two writers to one record run one after the other,
 * while writers to different records run freely. Entries are dropped when idle so the
 * map holds only keys with work in flight.
 */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<unknown>>();

  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const current = previous.then(work, work);
    const tail = current.catch(() => undefined);
    this.tails.set(key, tail);
    try {
      return await current;
    } finally {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }

  /** Whether no work for `key` is queued or running: a caller may then act at once, in order. */
  isIdle(key: string): boolean {
    return !this.tails.has(key);
  }
}
