/**
 * Runs `work` over `items` with at most `limit` in flight, keeping the results in order. Boot
 * reads thousands of small files: one at a time wastes the thread pool, all at once opens
 * thousands of descriptors. After a failure nothing new starts, and the first failure is thrown.
 */
export async function mapBounded<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (!failed && next < items.length) {
      const index = next++;
      try {
        results[index] = await work(items[index] as T);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
