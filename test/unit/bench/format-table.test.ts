import { describe, expect, it } from "vitest";
import {
  formatConditions,
  formatFigure,
  formatGoalTable,
  formatLoadTable,
} from "../../../bench/lib/format-table.ts";
import { goalRow, goalRows } from "../../../bench/lib/goals.ts";
import { report, stats } from "./fixtures.ts";

describe("the goal table", () => {
  it("has the issue's columns and one line per row, met or not", () => {
    const goal = { on: "ratio", op: ">=", value: 5, text: "≥ 5×" } as const;
    const table = formatGoalTable([
      goalRow("fast", goal, {
        era: "2025-11-25",
        atrium: { value: 5000, unit: "req/s" },
        baseline: { value: 900, unit: "req/s" },
      }),
      goalRow("slow", goal, {
        atrium: { value: 100, unit: "req/s" },
        baseline: { value: 900, unit: "req/s" },
      }),
      goalRow("absent", goal, { problem: "the server did not start" }),
    ]);
    const lines = table.split("\n");
    expect(lines[0]).toMatch(/^measure\s+era\s+Atrium\s+baseline\s+ratio\s+goal\s+met\?$/);
    expect(lines[1]).toMatch(/^fast\s+2025-11-25\s+5000 req\/s\s+900 req\/s\s+×5\.56\s+≥ 5×\s+yes$/);
    expect(lines[2]).toMatch(/^slow\s+–\s+100 req\/s\s+900 req\/s\s+×0\.11\s+≥ 5×\s+no$/);
    expect(lines[3]).toMatch(/^absent\s+–\s+–\s+–\s+–\s+≥ 5×\s+not measured$/);
    expect(table).toContain("absent: the server did not start");
  });

  it("columns line up whatever the widths", () => {
    const table = formatGoalTable(goalRows(report([])));
    const header = table.split("\n")[0] ?? "";
    const goalColumn = header.indexOf("goal");
    for (const line of table.split("\n").slice(1, 17)) expect(line.length).toBe(header.length);
    expect(goalColumn).toBeGreaterThan(0);
  });

  it("each unit is written with the precision it needs", () => {
    expect(formatFigure({ value: 1234.56, unit: "req/s" })).toBe("1235 req/s");
    expect(formatFigure({ value: 161.04, unit: "MB/s" })).toBe("161.0 MB/s");
    expect(formatFigure({ value: 4.126, unit: "ms" })).toBe("4.13 ms");
    expect(formatFigure(undefined)).toBe("–");
  });
});

describe("the load table and the conditions line", () => {
  it("shows a failed target as failed, not as zero", () => {
    const table = formatLoadTable([
      {
        id: "a",
        group: "ping",
        role: "atrium",
        label: "atrium ping",
        era: "2025-11-25",
        stats: stats(2000, 3, 9),
      },
      { id: "h", group: "ping", role: "baseline", label: "hono", error: "refused" },
    ]);
    expect(table).toMatch(/atrium ping\s+2025-11-25\s+2000\s+3\.00\s+9\.00\s+×3\.00\s+–\s+20000/);
    expect(table).toMatch(/hono\s+–\s+failed/);
  });

  it("says what the numbers were measured on", () => {
    const line = formatConditions(report([]));
    expect(line).toContain("16 connections, 2s warm-up + 10s measured per target in 4 interleaved rounds");
    expect(line).toContain("v20.20.2, 2 × Test CPU, load average 0.50 at start");
  });
});
