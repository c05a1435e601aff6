// Nearest-rank percentile over raw samples. autocannon's own latency histogram stores whole
// milliseconds, which flattens sub-millisecond loopback latencies into 0/1/2; we keep exact values.
export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? Number.NaN;
}
