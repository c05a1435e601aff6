import { cpus, loadavg } from "node:os";
import type { LoadSettings, LoadStats } from "./load-test.ts";
import type { TargetKey } from "./target.ts";
import { ERAS, type Era } from "./tool-call.ts";

/** One row: one server loaded in one protocol era, measured or failed with the reason. */
export type TargetResult = {
  key: TargetKey;
  label: string;
  era: Era;
  tool: string;
} & ({ stats: LoadStats; error?: never } | { error: string; stats?: never });

export interface Ratio {
  requestsPerSec: number;
  p50: number;
  p99: number;
  /** Server CPU per request; above 1 means Atrium spends more. Absent where not measurable. */
  serverCpuPerRequest?: number;
}

/** What carrying an access token adds to each request: atrium-oauth minus atrium, in µs. */
export interface TokenPathCost {
  /**
   * The difference in 1 / (req/s). The server is the bottleneck, so 1 / (req/s) is the time it
   * spends per request, and the difference is the server time the token checks add to one.
   */
  perRequestUs: number;
  /** The difference in p50. It includes queueing behind the other connections, so it is larger. */
  p50Us: number;
}

/** The comparisons within one era; a ratio is absent when either of its rows failed. */
export interface EraComparison {
  ratios: { atriumOverBareSdk?: Ratio; atriumOverCeiling?: Ratio; atriumOauthOverAtrium?: Ratio };
  tokenPathCost?: TokenPathCost;
}

export interface BenchResults {
  finishedAt: string;
  machine: { node: string; platform: string; cpus: number; cpuModel: string; loadAverageAtStart: number };
  settings: LoadSettings;
  /** One row per server × era. */
  targets: TargetResult[];
  skipped: Array<{ key: TargetKey; reason: string }>;
  eras: Record<Era, EraComparison>;
}

// Sampled before any server starts: on a shared 2-core box, other work running alongside the bench
// moves the absolute numbers a lot (the ratios less so), and this is the hint that it happened.
export function sampleLoadAverage(): number {
  return loadavg()[0] ?? 0;
}

export function buildResults(
  loadAverageAtStart: number,
  settings: LoadSettings,
  targets: TargetResult[],
  skipped: BenchResults["skipped"],
): BenchResults {
  const eras = Object.fromEntries(ERAS.map((era) => [era, compare(targets, era)])) as Record<
    Era,
    EraComparison
  >;
  return {
    finishedAt: new Date().toISOString(),
    machine: {
      node: process.version,
      platform: `${process.platform}-${process.arch}`,
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? "unknown",
      loadAverageAtStart,
    },
    settings,
    targets,
    skipped,
    eras,
  };
}

function compare(targets: TargetResult[], era: Era): EraComparison {
  const find = (key: TargetKey) => targets.find((target) => target.key === key && target.era === era)?.stats;
  const atrium = find("atrium");
  const atriumOauth = find("atrium-oauth");
  const bare = find("bare-sdk");
  const ceiling = find("plain-hono");
  return {
    ratios: {
      ...(atrium && bare ? { atriumOverBareSdk: ratio(atrium, bare) } : {}),
      ...(atrium && ceiling ? { atriumOverCeiling: ratio(atrium, ceiling) } : {}),
      ...(atriumOauth && atrium ? { atriumOauthOverAtrium: ratio(atriumOauth, atrium) } : {}),
    },
    ...(atriumOauth && atrium ? { tokenPathCost: tokenPathCost(atriumOauth, atrium) } : {}),
  };
}

// req/s ratio below 1 means Atrium is slower; latency ratios above 1 mean Atrium is slower.
function ratio(of: LoadStats, to: LoadStats): Ratio {
  const cpu =
    of.serverCpuUsPerRequest !== undefined && to.serverCpuUsPerRequest !== undefined
      ? { serverCpuPerRequest: of.serverCpuUsPerRequest / to.serverCpuUsPerRequest }
      : {};
  return {
    requestsPerSec: of.requestsPerSec / to.requestsPerSec,
    p50: of.p50Ms / to.p50Ms,
    p99: of.p99Ms / to.p99Ms,
    ...cpu,
  };
}

function tokenPathCost(withToken: LoadStats, without: LoadStats): TokenPathCost {
  return {
    perRequestUs: 1e6 / withToken.requestsPerSec - 1e6 / without.requestsPerSec,
    p50Us: (withToken.p50Ms - without.p50Ms) * 1e3,
  };
}
