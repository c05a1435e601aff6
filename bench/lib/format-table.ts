import type { Figure, GoalRow } from "./goals.ts";
import type { BenchReport, LoadRow } from "./report.ts";

// Plain fixed-width text: readable in a terminal and pasteable into a PR or an ADR as-is.

/** measure | era | Atrium | baseline | ratio | goal | met? — one line per goal row. */
export function formatGoalTable(rows: readonly GoalRow[]): string {
  const lines: string[][] = [["measure", "era", "Atrium", "baseline", "ratio", "goal", "met?"]];
  for (const row of rows) {
    lines.push([
      row.measure,
      row.era ?? "–",
      formatFigure(row.atrium),
      formatFigure(row.baseline),
      row.ratio === undefined ? "–" : `×${formatRatio(row.ratio)}`,
      row.goal.text,
      verdict(row),
    ]);
  }
  const problems = rows.flatMap((row) =>
    row.problem ? [`${row.measure}${row.era ? ` (${row.era})` : ""}: ${row.problem}`] : [],
  );
  return [align(lines), ...(problems.length > 0 ? ["", ...problems] : [])].join("\n");
}

export function verdict(row: GoalRow): string {
  if (row.met === undefined) return "not measured";
  return row.met ? "yes" : "no";
}

/**
 * The raw figures of every load row: what the ratios above are made of. Each row's p99/p50 is
 * shown too, so the baselines' own tails say how much of Atrium's is the machine's.
 */
export function formatLoadTable(rows: readonly LoadRow[]): string {
  const lines: string[][] = [
    ["target", "era", "req/s", "p50 ms", "p99 ms", "p99/p50", "CPU µs/req", "requests"],
  ];
  for (const row of rows) {
    const era = row.era ?? "–";
    if (!row.stats) {
      lines.push([row.label, era, "failed", "–", "–", "–", "–", "–"]);
      continue;
    }
    const { stats } = row;
    lines.push([
      row.label,
      era,
      stats.requestsPerSec.toFixed(0),
      stats.p50Ms.toFixed(2),
      stats.p99Ms.toFixed(2),
      stats.p50Ms > 0 ? `×${formatRatio(stats.p99Ms / stats.p50Ms)}` : "–",
      stats.serverCpuUsPerRequest?.toFixed(0) ?? "–",
      String(stats.totalRequests),
    ]);
  }
  return align(lines);
}

/** The line that says what the numbers were measured on. */
export function formatConditions(report: BenchReport): string {
  const { settings, machine } = report;
  const end = machine.loadAverageAtEnd === undefined ? "" : `, ${machine.loadAverageAtEnd.toFixed(2)} at end`;
  return (
    `${settings.connections} connections, ${settings.warmupSeconds}s warm-up + ${settings.seconds}s measured per target ` +
    `in ${settings.rounds} interleaved rounds; ${machine.node}, ${machine.cpus} × ${machine.cpuModel}, ` +
    `load average ${machine.loadAverageAtStart.toFixed(2)} at start${end}`
  );
}

export function formatFigure(figure: Figure | undefined): string {
  if (!figure) return "–";
  const digits = figure.unit === "req/s" ? 0 : figure.unit === "MB/s" ? 1 : 2;
  return `${figure.value.toFixed(digits)} ${figure.unit}`;
}

export function formatRatio(ratio: number): string {
  return ratio >= 10 ? ratio.toFixed(1) : ratio.toFixed(2);
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
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}
