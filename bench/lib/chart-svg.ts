import type { BenchReport, LoadGroup } from "./report.ts";

// One hand-written SVG chart of the run: a panel per comparison, a horizontal bar per target,
// Atrium and its baselines side by side. Each panel has its own scale, because a plain hono route
// serves ten times what any MCP request does and would flatten every other panel.

export interface ChartBar {
  label: string;
  value: number;
  role: "atrium" | "baseline";
}

export interface ChartPanel {
  title: string;
  unit: string;
  bars: ChartBar[];
}

const WIDTH = 820;
const LABEL_WIDTH = 300;
const VALUE_WIDTH = 90;
const BAR_HEIGHT = 18;
const BAR_GAP = 6;
const PANEL_TITLE = 26;
const PANEL_GAP = 14;
const MARGIN = 16;
const COLOURS = { atrium: "#2f6fb3", baseline: "#9aa5b1" } as const;

const TITLES: Record<LoadGroup, string> = {
  "files-info": "tools/call files__info",
  ping: "ping",
  "tools-list": "tools/list",
  opening: "initialize / server/discover, 9 skills",
  "opening-token": "initialize / server/discover, access token",
  "skills-list": "skills/list (Skills Extension), 2026-07-28",
};

/** The panels of a report: every measured load row, then the transfers; failed rows are left out. */
export function chartPanels(report: BenchReport): ChartPanel[] {
  const panels: ChartPanel[] = [];
  for (const group of Object.keys(TITLES) as LoadGroup[]) {
    const bars = report.loads.flatMap((row) =>
      row.group === group && row.stats
        ? [
            {
              label: row.era ? `${row.label} ${row.era}` : row.label,
              value: row.stats.requestsPerSec,
              role: row.role,
            },
          ]
        : [],
    );
    if (bars.length > 0) panels.push({ title: TITLES[group], unit: "req/s", bars });
  }
  const transfer = report.transfer;
  if (transfer && !("error" in transfer)) {
    panels.push({
      title: "49 MiB file",
      unit: "MB/s",
      bars: [
        { label: "Atrium download", value: transfer.downloadMBps, role: "atrium" },
        { label: "Atrium upload", value: transfer.uploadMBps, role: "atrium" },
        { label: "cp", value: transfer.copyMBps, role: "baseline" },
        { label: "cp + fsync", value: transfer.copySyncedMBps, role: "baseline" },
      ],
    });
  }
  return panels;
}

export function drawChart(panels: readonly ChartPanel[], caption: string): string {
  const body: string[] = [];
  let y = MARGIN;
  body.push(text(MARGIN, y + 12, caption, 'font-size="12" fill="#444"'));
  y += 24;
  const barSpace = WIDTH - 2 * MARGIN - LABEL_WIDTH - VALUE_WIDTH;
  for (const panel of panels) {
    body.push(text(MARGIN, y + 16, `${panel.title} (${panel.unit})`, 'font-size="14" font-weight="bold"'));
    y += PANEL_TITLE;
    const max = Math.max(0, ...panel.bars.map((bar) => bar.value));
    for (const bar of panel.bars) {
      const width = max > 0 ? Math.max(1, (bar.value / max) * barSpace) : 0;
      const x = MARGIN + LABEL_WIDTH;
      body.push(
        text(MARGIN, y + 13, bar.label, 'font-size="12"'),
        `<rect x="${x}" y="${y}" width="${width.toFixed(1)}" height="${BAR_HEIGHT}" fill="${COLOURS[bar.role]}"/>`,
        text(x + width + 6, y + 13, formatValue(bar.value), 'font-size="12"'),
      );
      y += BAR_HEIGHT + BAR_GAP;
    }
    y += PANEL_GAP;
  }
  const legendY = y + 4;
  body.push(
    `<rect x="${MARGIN}" y="${legendY}" width="12" height="12" fill="${COLOURS.atrium}"/>`,
    text(MARGIN + 18, legendY + 11, "Atrium", 'font-size="12"'),
    `<rect x="${MARGIN + 90}" y="${legendY}" width="12" height="12" fill="${COLOURS.baseline}"/>`,
    text(MARGIN + 108, legendY + 11, "baseline run by the bench", 'font-size="12"'),
  );
  const height = legendY + 12 + MARGIN;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif">`,
    `<rect width="${WIDTH}" height="${height}" fill="#fff"/>`,
    ...body,
    "</svg>",
    "",
  ].join("\n");
}

function formatValue(value: number): string {
  return value >= 100 ? Math.round(value).toLocaleString("en-US") : value.toFixed(1);
}

function text(x: number, y: number, content: string, attributes: string): string {
  return `<text x="${x}" y="${y}" ${attributes}>${escapeXml(content)}</text>`;
}

export function escapeXml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
