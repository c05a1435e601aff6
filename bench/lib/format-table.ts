import type { BenchResults, EraComparison, Ratio } from "./results.ts";
import { ERAS } from "./tool-call.ts";

// Plain fixed-width text: readable in a terminal and pasteable into a PR or an ADR as-is.
export function formatTable(results: BenchResults): string {
  const rows: string[][] = [["server", "era", "tool", "req/s", "p50 ms", "p99 ms", "CPU µs/req", "requests"]];
  const failures: string[] = [];
  for (const target of results.targets) {
    if (target.error !== undefined) {
      rows.push([target.label, target.era, target.tool, "failed", "–", "–", "–", "–"]);
      failures.push(`${target.label} ${target.era} failed: ${target.error}`);
      continue;
    }
    const { stats } = target;
    rows.push([
      target.label,
      target.era,
      target.tool,
      stats.requestsPerSec.toFixed(0),
      stats.p50Ms.toFixed(2),
      stats.p99Ms.toFixed(2),
      stats.serverCpuUsPerRequest?.toFixed(0) ?? "–",
      String(stats.totalRequests),
    ]);
  }
  const lines = [align(rows)];
  if (failures.length > 0) lines.push("", ...failures);
  for (const era of ERAS) lines.push(...formatComparison(era, results.eras[era]));
  for (const skip of results.skipped) lines.push("", `skipped ${skip.key}: ${skip.reason}`);

  const { settings, machine } = results;
  lines.push(
    "",
    `${settings.connections} connections, ${settings.warmupSeconds}s warm-up + ${settings.seconds}s measured per server and era; ` +
      `${machine.node}, ${machine.cpus} × ${machine.cpuModel}, load average ${machine.loadAverageAtStart.toFixed(2)} at start`,
  );
  return `${lines.join("\n")}\n`;
}

function formatComparison(era: string, comparison: EraComparison): string[] {
  const ratioRows: string[][] = [];
  const addRatio = (name: string, r: Ratio | undefined) => {
    if (r)
      ratioRows.push([
        `${name} (${era})`,
        `req/s ×${r.requestsPerSec.toFixed(2)}`,
        `p50 ×${r.p50.toFixed(2)}`,
        `p99 ×${r.p99.toFixed(2)}`,
        r.serverCpuPerRequest === undefined ? "" : `CPU/req ×${r.serverCpuPerRequest.toFixed(2)}`,
      ]);
  };
  addRatio("atrium / bare-sdk", comparison.ratios.atriumOverBareSdk);
  addRatio("atrium / ceiling", comparison.ratios.atriumOverCeiling);
  addRatio("atrium-oauth / atrium", comparison.ratios.atriumOauthOverAtrium);
  const lines = ratioRows.length > 0 ? ["", align(ratioRows)] : [];
  const cost = comparison.tokenPathCost;
  if (cost) {
    lines.push(
      `token path (atrium-oauth − atrium, ${era}): ${signedUs(cost.perRequestUs)} per request from req/s, ` +
        `${signedUs(cost.p50Us)} at p50`,
    );
  }
  return lines;
}

function signedUs(us: number): string {
  return `${us >= 0 ? "+" : "−"}${Math.abs(us).toFixed(0)} µs`;
}

function align(rows: string[][]): string {
  const widths =
    rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? "").length))) ?? [];
  // First column left-aligned (names), the rest right-aligned (numbers).
  return rows
    .map((row) =>
      row
        .map((cell, column) =>
          column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0),
        )
        .join("  "),
    )
    .join("\n");
}
