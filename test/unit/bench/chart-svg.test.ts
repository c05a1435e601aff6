import { describe, expect, it } from "vitest";
import { type ChartPanel, chartPanels, drawChart, escapeXml } from "../../../bench/lib/chart-svg.ts";
import { report, stats } from "./fixtures.ts";

const panel: ChartPanel = {
  title: "ping",
  unit: "req/s",
  bars: [
    { label: "atrium ping 2025-11-25", value: 2500, role: "atrium" },
    { label: "plain hono JSON route", value: 10_000, role: "baseline" },
  ],
};

const widths = (svg: string) =>
  [...svg.matchAll(/<rect x="[\d.]+" y="[\d.]+" width="([\d.]+)" height="18"/g)].map((m) => Number(m[1]));

describe("the SVG chart", () => {
  it("is one well-formed svg element with a bar per target, scaled within its panel", () => {
    const svg = drawChart([panel], "caption");
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith("</svg>")).toBe(true);
    const [atrium, hono] = widths(svg);
    expect(hono).toBeGreaterThan(0);
    expect((atrium ?? 0) / (hono ?? 1)).toBeCloseTo(0.25, 2);
    expect(svg).toContain(">2,500<");
    expect(svg).toContain(">10,000<");
  });

  it("gives each panel its own scale, so a small panel's largest bar is full width", () => {
    const small: ChartPanel = {
      title: "files",
      unit: "req/s",
      bars: [{ label: "a", value: 50, role: "atrium" }],
    };
    const [, hono, full] = widths(drawChart([panel, small], "c"));
    expect(full).toBe(hono);
  });

  it("escapes text, so a label cannot break the markup", () => {
    expect(escapeXml(`<a & "b">`)).toBe("&#60;a &#38; &#34;b&#34;&#62;");
    const svg = drawChart([{ ...panel, title: "x < y" }], "a & b");
    expect(svg).toContain("x &#60; y");
    expect(svg).toContain("a &#38; b");
    expect(svg).not.toContain("x < y");
  });

  it("draws an empty or all-zero panel without dividing by zero", () => {
    const svg = drawChart(
      [{ title: "none", unit: "req/s", bars: [{ label: "z", value: 0, role: "atrium" }] }],
      "c",
    );
    expect(svg).not.toContain("NaN");
    expect(widths(svg)).toEqual([0]);
  });

  it("draws the measured rows of a report, leaving out failed ones, and the transfers in MB/s", () => {
    const panels = chartPanels(
      report(
        [
          {
            id: "a",
            group: "ping",
            role: "atrium",
            label: "atrium ping",
            era: "2025-11-25",
            stats: stats(2000),
          },
          { id: "h", group: "ping", role: "baseline", label: "hono", error: "refused" },
        ],
        {
          transfer: {
            bytes: 1,
            repeats: 1,
            downloadMBps: 100,
            uploadMBps: 90,
            copyMBps: 400,
            copySyncedMBps: 150,
          },
        },
      ),
    );
    expect(panels.map((p) => [p.title, p.unit, p.bars.length])).toEqual([
      ["ping", "req/s", 1],
      ["49 MiB file", "MB/s", 4],
    ]);
  });
});
