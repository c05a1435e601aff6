import type { LoadStats } from "../../../bench/lib/load-test.ts";
import { OPENING_BASELINE } from "../../../bench/lib/opening-baseline.ts";
import type { BenchReport, LoadRow } from "../../../bench/lib/report.ts";

// A report built by hand, so the goal judgement, the table and the chart are tested on figures
// whose right answers are known.

export function stats(requestsPerSec: number, p50Ms = 1, p99Ms = 2): LoadStats {
  return { requestsPerSec, p50Ms, p99Ms, totalRequests: Math.round(requestsPerSec * 10), durationSec: 10 };
}

export function report(loads: LoadRow[], extra: Partial<BenchReport> = {}): BenchReport {
  return {
    startedAt: "2026-12-03T18:00:00.000Z",
    machine: {
      node: "v20.20.2",
      platform: "linux-x64",
      cpus: 2,
      cpuModel: "Test CPU",
      loadAverageAtStart: 0.5,
    },
    settings: { connections: 16, warmupSeconds: 2, seconds: 10, rounds: 4 },
    openingBaseline: {
      ...OPENING_BASELINE,
      requestsPerSec: { "2025-11-25": 500, "2026-07-28": 400 },
    },
    loads,
    ...extra,
  };
}
