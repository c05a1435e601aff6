import type { BenchResults, Ratio } from "./results.ts";

// Plain fixed-width text: readable in a terminal and pasteable into a PR or an ADR as-is.
export function formatTable(results: BenchResults): string {
  const rows: string[][] = [["server", "tool", "req/s", "p50 ms", "p99 ms", "requests"]];
  for (const target of results.targets) {
    const { stats } = target;
    rows.push([
      target.label,
      target.tool,
      stats.requestsPerSec.toFixed(0),
      stats.p50Ms.toFixed(2),
      stats.p99Ms.toFixed(2),
      String(stats.totalRequests),
    ]);
  }
  const lines = [align(rows)];

  const ratioRows: string[][] = [];
  const addRatio = (name: string, r: Ratio | undefined) => {
    if (r)
      ratioRows.push([
        name,
        `req/s ×${r.requestsPerSec.toFixed(2)}`,
        `p50 ×${r.p50.toFixed(2)}`,
        `p99 ×${r.p99.toFixed(2)}`,
      ]);
  };
  addRatio("atrium / bare-sdk", results.ratios.atriumOverBareSdk);
  addRatio("atrium / ceiling", results.ratios.atriumOverCeiling);
  addRatio("atrium-oauth / atrium", results.ratios.atriumOauthOverAtrium);
  if (ratioRows.length > 0) lines.push("", align(ratioRows));

  const cost = results.tokenPathCost;
  if (cost) {
    lines.push(
      "",
      `token path (atrium-oauth − atrium): ${signedUs(cost.perRequestUs)} per request from req/s, ` +
        `${signedUs(cost.p50Us)} at p50`,
    );
  }

  for (const skip of results.skipped) lines.push("", `skipped ${skip.key}: ${skip.reason}`);

  const { settings, machine } = results;
  lines.push(
    "",
    `${settings.connections} connections, ${settings.warmupSeconds}s warm-up + ${settings.seconds}s measured per server; ` +
      `${machine.node}, ${machine.cpus} × ${machine.cpuModel}, load average ${machine.loadAverageAtStart.toFixed(2)} at start`,
  );
  return `${lines.join("\n")}\n`;
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
