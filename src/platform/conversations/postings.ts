/** A word's postings as a list of keys: the index keeps one as the number itself, more as an array. */
export function keysOf(value: number | number[] | undefined): number[] {
  if (value === undefined) return [];
  return typeof value === "number" ? [value] : value;
}

/** The keys of `first` that every one of `others` holds too. */
export function keysInAll(first: readonly number[], others: readonly number[][]): number[] {
  const counts = new Map<number, number>(first.map((key) => [key, 1]));
  for (const list of others) {
    for (const key of list) {
      const count = counts.get(key);
      if (count !== undefined) counts.set(key, count + 1);
    }
  }
  return [...counts].flatMap(([key, count]) => (count === others.length + 1 ? [key] : []));
}
