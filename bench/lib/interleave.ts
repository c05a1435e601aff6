import {
  type LoadSettings,
  type LoadSpec,
  type LoadStats,
  loadSlice,
  mergeSlices,
  type Slice,
} from "./load-test.ts";
import { progress } from "./progress.ts";

/** One target of an interleaved group: a request at a server, checked once before it is loaded. */
export interface InterleavedTarget {
  id: string;
  spec: LoadSpec;
  /** One fully checked request, so a misconfigured target fails loudly instead of being measured. */
  preflight: () => Promise<unknown>;
}

export type Outcome = { stats: LoadStats; error?: never } | { error: string; stats?: never };

/**
 * Loads the targets of one comparison in turns: each gets its warm-up, then `rounds` slices of
 * `seconds / rounds`, the order rotating every round. Whatever else the shared machine does during
 * the run then lands on every target alike, so the ratios between them hold even when the
 * absolute figures move. A target whose pre-flight or slice fails is reported with the reason and
 * left out of later rounds; the others carry on.
 */
export async function runInterleaved(
  targets: readonly InterleavedTarget[],
  settings: LoadSettings,
): Promise<Map<string, Outcome>> {
  const outcomes = new Map<string, Outcome>();
  const slices = new Map<string, Slice[]>();
  const fail = (id: string, error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    progress(`${id}: FAILED — ${message}`);
    outcomes.set(id, { error: message });
  };
  for (const target of targets) {
    try {
      await target.preflight();
      await loadSlice(target.spec, settings.connections, settings.warmupSeconds, `${target.id} warm-up`);
      slices.set(target.id, []);
    } catch (error) {
      fail(target.id, error);
    }
  }
  const sliceSeconds = settings.seconds / settings.rounds;
  for (let round = 0; round < settings.rounds; round++) {
    for (const target of rotate(targets, round)) {
      const done = slices.get(target.id);
      if (!done || outcomes.has(target.id)) continue;
      try {
        done.push(
          await loadSlice(target.spec, settings.connections, sliceSeconds, `${target.id} round ${round + 1}`),
        );
      } catch (error) {
        fail(target.id, error);
      }
    }
  }
  for (const [id, done] of slices) {
    if (outcomes.has(id)) continue;
    let stats: LoadStats;
    try {
      stats = mergeSlices(done);
    } catch (error) {
      // No answer within any slice: this target's failure, not the whole run's.
      fail(id, error);
      continue;
    }
    outcomes.set(id, { stats });
    progress(
      `${id}: ${stats.requestsPerSec.toFixed(0)} req/s, p50 ${stats.p50Ms.toFixed(2)} ms, p99 ${stats.p99Ms.toFixed(2)} ms, ` +
        `server CPU ${stats.serverCpuUsPerRequest?.toFixed(0) ?? "?"} µs/request`,
    );
  }
  return outcomes;
}

/** The list started `by` places later, so no target is always the first after a pause. */
export function rotate<T>(items: readonly T[], by: number): T[] {
  if (items.length === 0) return [];
  const shift = by % items.length;
  return [...items.slice(shift), ...items.slice(0, shift)];
}
