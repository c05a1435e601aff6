/**
 * Runs `run` for every item, at most `limit` at a time, in order of the items; resolves once all
 * have ended. One item's failure does not stop the others: the first is thrown once all have ended.
 */
export async function forEachAtMost<T>(
  items: Iterable<T>,
  limit: number,
  run: (item: T) => Promise<void>,
): Promise<void> {
  const pending = items[Symbol.iterator]();
  const failures: unknown[] = [];
  const lane = async () => {
    for (let next = pending.next(); !next.done; next = pending.next()) {
      try {
        await run(next.value);
      } catch (error) {
        failures.push(error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, limit) }, lane));
  if (failures.length > 0) throw failures[0];
}
