import autocannon from "autocannon";
import { LatencyRecorder } from "./latency-recorder.ts";
import { percentile } from "./percentile.ts";
import type { HttpRequestSpec } from "./tool-call.ts";
import { looksSuccessful } from "./tool-result.ts";

export interface LoadSettings {
  connections: number;
  warmupSeconds: number;
  /** Measured seconds per target, split over `rounds` slices interleaved with the other targets. */
  seconds: number;
  rounds: number;
}

export interface LoadStats {
  requestsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  totalRequests: number;
  durationSec: number;
  /** The server's CPU time over the measured slices divided by their requests, where measurable. */
  serverCpuUsPerRequest?: number;
}

/** One request loaded at one URL; `cpuUs` reads the CPU the serving process has used so far. */
export interface LoadSpec {
  url: string;
  request: HttpRequestSpec;
  cpuUs: () => number | undefined;
}

/** What one slice of load measured, kept raw so slices of the same target can be merged. */
export interface Slice {
  latencies: LatencyRecorder;
  durationSec: number;
  cpuUs?: number;
}

// One burst of load. A burst with failures measured (partly) the error path, so it throws
// rather than report numbers that are not worth reporting.
export async function loadSlice(spec: LoadSpec, connections: number, seconds: number, phase: string) {
  const latencies = new LatencyRecorder();
  const cpuBefore = spec.cpuUs();
  const instance = autocannon({
    url: spec.url,
    ...spec.request,
    connections,
    duration: seconds,
    verifyBody: looksSuccessful,
  });
  instance.on("response", (_client, statusCode, _bytes, responseTime) => {
    if (statusCode >= 200 && statusCode < 300) latencies.record(responseTime);
  });
  const result = await instance;
  const cpuAfter = spec.cpuUs();
  const failures = {
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    mismatches: result.mismatches,
  };
  if (Object.values(failures).some((count) => count > 0)) {
    throw new Error(
      `${phase} against ${spec.url} had failures ${JSON.stringify(failures)}; status codes ${JSON.stringify(result.statusCodeStats)}`,
    );
  }
  // A slice may complete nothing on a loaded machine (every answer slower than the slice); the
  // merge of a target's slices fails only if none of them completed anything.
  const slice: Slice = { latencies, durationSec: result.duration };
  if (cpuBefore !== undefined && cpuAfter !== undefined) slice.cpuUs = cpuAfter - cpuBefore;
  return slice;
}

/** The slices of one target as one measurement: every sample, every second, all the CPU. */
export function mergeSlices(slices: readonly Slice[]): LoadStats {
  const all = new LatencyRecorder();
  let durationSec = 0;
  let cpuUs: number | undefined = 0;
  for (const slice of slices) {
    all.append(slice.latencies);
    durationSec += slice.durationSec;
    cpuUs = cpuUs === undefined || slice.cpuUs === undefined ? undefined : cpuUs + slice.cpuUs;
  }
  const sorted = all.sorted();
  if (sorted.length === 0 || durationSec <= 0) throw new Error("no request completed in any slice");
  const stats: LoadStats = {
    // Completed requests over wall time: unlike autocannon's per-second-sample average, this does
    // not drop a partial last second.
    requestsPerSec: sorted.length / durationSec,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    totalRequests: sorted.length,
    durationSec,
  };
  if (cpuUs !== undefined) stats.serverCpuUsPerRequest = cpuUs / sorted.length;
  return stats;
}
