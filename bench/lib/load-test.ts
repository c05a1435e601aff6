import autocannon from "autocannon";
import { LatencyRecorder } from "./latency-recorder.ts";
import { percentile } from "./percentile.ts";
import { type Era, type ToolCall, toolCallRequest } from "./tool-call.ts";
import { looksSuccessful } from "./tool-result.ts";

export interface LoadSettings {
  connections: number;
  warmupSeconds: number;
  seconds: number;
}

export interface LoadStats {
  requestsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  totalRequests: number;
  durationSec: number;
  /** The server's CPU time over the measured run divided by its requests, where measurable. */
  serverCpuUsPerRequest?: number;
  /** autocannon's own whole-millisecond percentiles, kept for cross-checking. */
  autocannon: { requestsPerSecAvg: number; p50Ms: number; p99Ms: number };
}

// Warm-up first (JIT, connection setup, file cache), discarded; then the measured run.
export async function runLoad(
  call: ToolCall,
  era: Era,
  settings: LoadSettings,
  serverCpuUs: () => number | undefined,
): Promise<LoadStats> {
  await measure(call, era, settings.connections, settings.warmupSeconds, "warm-up");
  const cpuBefore = serverCpuUs();
  const stats = await measure(call, era, settings.connections, settings.seconds, "measured run");
  const cpuAfter = serverCpuUs();
  if (cpuBefore === undefined || cpuAfter === undefined) return stats;
  return { ...stats, serverCpuUsPerRequest: (cpuAfter - cpuBefore) / stats.totalRequests };
}

async function measure(
  call: ToolCall,
  era: Era,
  connections: number,
  seconds: number,
  phase: string,
): Promise<LoadStats> {
  const latencies = new LatencyRecorder();
  const instance = autocannon({
    url: call.url,
    ...toolCallRequest(call, era),
    connections,
    duration: seconds,
    verifyBody: looksSuccessful,
  });
  instance.on("response", (_client, statusCode, _bytes, responseTime) => {
    if (statusCode >= 200 && statusCode < 300) latencies.record(responseTime);
  });
  const result = await instance;

  // A run with failures measured (partly) the error path, so its numbers are not worth reporting.
  const failures = {
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    mismatches: result.mismatches,
  };
  if (Object.values(failures).some((count) => count > 0)) {
    throw new Error(
      `${phase} against ${call.url} had failures ${JSON.stringify(failures)}; status codes ${JSON.stringify(result.statusCodeStats)}`,
    );
  }

  const sorted = latencies.sorted();
  if (sorted.length === 0) throw new Error(`${phase} against ${call.url} completed no requests`);
  return {
    // Completed requests over wall time: unlike autocannon's per-second-sample average, this does
    // not drop a partial last second.
    requestsPerSec: sorted.length / result.duration,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    totalRequests: sorted.length,
    durationSec: result.duration,
    autocannon: {
      requestsPerSecAvg: result.requests.average,
      p50Ms: result.latency.p50,
      p99Ms: result.latency.p99,
    },
  };
}
