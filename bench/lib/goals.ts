import type { BenchReport, LoadGroup, LoadRow } from "./report.ts";
import { ERAS, type Era } from "./tool-call.ts";

// Issue 15's goal table, judged from one run's figures. Pure: the table, the JSON and the chart
// are all drawn from what this returns, and test/unit/bench/goals.test.ts pins the judgement.

export type Unit = "req/s" | "MB/s" | "ms" | "KB";

export interface Figure {
  value: number;
  unit: Unit;
}

/** A goal is a bound on the ratio (Atrium over its baseline) or on Atrium's own figure. */
export interface Goal {
  on: "ratio" | "atrium";
  op: ">=" | "<=" | "<";
  value: number;
  text: string;
}

export interface GoalRow {
  measure: string;
  era?: Era;
  atrium?: Figure;
  baseline?: Figure;
  ratio?: number;
  goal: Goal;
  /** Undefined when the figure it is judged on was not measured (see `problem`). */
  met?: boolean;
  problem?: string;
}

const KIB = 1024;

/** Rows that cannot be measured in an era, and why (bench/load.ts does not load them). */
export const NOT_SERVED: Partial<Record<LoadGroup, Partial<Record<Era, string>>>> = {
  ping: {
    "2026-07-28":
      "ping is not a 2026-07-28 method: the SDK's own server answers -32601 Method not found, as Atrium does",
  },
};
const MEMORY_GOAL_KB = 10;
/** Of what touching added, at most this share may stay after eviction for it to count as returned. */
const RETAINED_SHARE_MAX = 0.1;

export function judge(goal: Goal, figure: number | undefined): boolean | undefined {
  if (figure === undefined || !Number.isFinite(figure)) return undefined;
  if (goal.op === ">=") return figure >= goal.value;
  return goal.op === "<=" ? figure <= goal.value : figure < goal.value;
}

/** Builds a row and judges it; a row with no figure says why rather than pass or fail. */
export function goalRow(
  measure: string,
  goal: Goal,
  figures: { era?: Era; atrium?: Figure; baseline?: Figure; problem?: string },
): GoalRow {
  const { atrium, baseline } = figures;
  const row: GoalRow = { measure, goal };
  if (figures.era) row.era = figures.era;
  if (atrium) row.atrium = atrium;
  if (baseline) row.baseline = baseline;
  if (atrium && baseline && baseline.value > 0) row.ratio = atrium.value / baseline.value;
  const met = judge(goal, goal.on === "ratio" ? row.ratio : atrium?.value);
  if (met === undefined) row.problem = figures.problem ?? "not measured";
  else row.met = met;
  return row;
}

const atLeast = (value: number, text: string): Goal => ({ on: "ratio", op: ">=", value, text });
const atMost = (value: number, text: string): Goal => ({ on: "ratio", op: "<=", value, text });

export function goalRows(report: BenchReport): GoalRow[] {
  const rows: GoalRow[] = [];
  const load = (group: LoadGroup, role: LoadRow["role"], era?: Era) =>
    report.loads.find((row) => row.group === group && row.role === role && row.era === era);
  const rate = (row: LoadRow | undefined): Figure | undefined =>
    row?.stats ? { value: row.stats.requestsPerSec, unit: "req/s" } : undefined;
  const why = (...sources: Array<LoadRow | undefined>) =>
    sources.map((row) => row?.error && `${row.label}: ${row.error}`).find(Boolean) || undefined;

  for (const era of ERAS) {
    // A baseline that speaks no protocol (the plain hono route) is one row for both eras.
    const pair = (measure: string, group: LoadGroup, goal: Goal, baselineEra: Era | "none" = era) => {
      const atrium = load(group, "atrium", era);
      const baseline = load(group, "baseline", baselineEra === "none" ? undefined : baselineEra);
      const problem = why(atrium, baseline) ?? NOT_SERVED[group]?.[era];
      rows.push(
        goalRow(measure, goal, { era, ...fig(rate(atrium), rate(baseline)), ...(problem && { problem }) }),
      );
    };
    pair("tools/call files__info vs bare SDK", "files-info", atLeast(5, "≥ 5×"));
    pair("ping vs plain hono JSON route", "ping", atLeast(0.3, "≥ 30%"), "none");
    pair("tools/list (default skills) vs bare SDK", "tools-list", atLeast(5, "≥ 5×"));

    const opening = load("opening", "atrium", era);
    const method = era === "2026-07-28" ? "server/discover" : "initialize";
    // Main's code before issue 15 loaded beside Atrium when it ran; otherwise the recorded figure.
    const beside = load("opening", "baseline", era);
    const recorded = report.openingBaseline.requestsPerSec[era];
    const before =
      rate(beside) ?? (beside === undefined && recorded > 0 ? { value: recorded, unit: "req/s" } : undefined);
    const against = beside ? "run beside" : `recorded ${report.openingBaseline.measuredAt.slice(0, 10)}`;
    rows.push(
      goalRow(`${method}, 9 skills, vs main before issue 15 (${against})`, atLeast(5, "≥ 5× today"), {
        era,
        ...fig(rate(opening), before),
        problem: why(opening, beside),
      }),
    );
    const token = load("opening-token", "atrium", era);
    rows.push(
      goalRow(`${method} with an access token vs dev`, atLeast(0.9, "within 10% of dev"), {
        era,
        ...fig(rate(token), rate(opening)),
        problem: why(token, opening),
      }),
    );
    const files = load("files-info", "atrium", era);
    rows.push(
      goalRow("p99 vs p50, files__info load", atMost(3, "≤ 3× p50"), {
        era,
        ...fig(
          files?.stats && { value: files.stats.p99Ms, unit: "ms" },
          files?.stats && { value: files.stats.p50Ms, unit: "ms" },
        ),
        problem: why(files),
      }),
    );
  }
  rows.push(...transferRows(report), ...memoryRows(report));
  return rows;
}

function transferRows({ transfer }: BenchReport): GoalRow[] {
  const measured = transfer && !("error" in transfer) ? transfer : undefined;
  const problem = transfer && "error" in transfer ? transfer.error : undefined;
  const mbps = (value: number | undefined): Figure | undefined =>
    value === undefined ? undefined : { value, unit: "MB/s" };
  // The upload is judged against the copy that does the same work: `cp` then an fsync, since an
  // upload is acknowledged only once on disk (adr/0024, adr/0063). `cp` alone is the download's.
  return [
    goalRow("49 MiB download vs cp", atLeast(0.8, "≥ 80%"), {
      ...fig(mbps(measured?.downloadMBps), mbps(measured?.copyMBps)),
      ...(problem && { problem }),
    }),
    goalRow("49 MiB upload vs cp + fsync", atLeast(0.7, "≥ 70%"), {
      ...fig(mbps(measured?.uploadMBps), mbps(measured?.copySyncedMBps)),
      ...(problem && { problem }),
    }),
  ];
}

function memoryRows({ memory }: BenchReport): GoalRow[] {
  const measured = memory && !("error" in memory) ? memory : undefined;
  const problem = memory && "error" in memory ? memory.error : undefined;
  const perWorkspace = (bytes: number) => (measured ? bytes / measured.workspaces / KIB : undefined);
  const touched = measured && perWorkspace(measured.touchedHeapBytes - measured.idleHeapBytes);
  const retained = measured && perWorkspace(measured.evictedHeapBytes - measured.idleHeapBytes);
  const count = measured?.workspaces ?? "N";
  return [
    goalRow(
      `heap per workspace, ${count} touched once`,
      { on: "atrium", op: "<", value: MEMORY_GOAL_KB, text: `< ${MEMORY_GOAL_KB} KB` },
      {
        ...fig(touched === undefined ? undefined : { value: touched, unit: "KB" }),
        ...(problem && { problem }),
      },
    ),
    // Judged as a share: what stays after eviction over what touching added.
    goalRow(`heap per workspace after eviction`, atMost(RETAINED_SHARE_MAX, "returned (≤ 10% kept)"), {
      ...fig(
        retained === undefined ? undefined : { value: retained, unit: "KB" },
        touched === undefined ? undefined : { value: touched, unit: "KB" },
      ),
      ...(problem && { problem }),
    }),
  ];
}

function fig(atrium: Figure | undefined, baseline?: Figure): { atrium?: Figure; baseline?: Figure } {
  return { ...(atrium && { atrium }), ...(baseline && { baseline }) };
}
