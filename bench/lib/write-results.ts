import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { benchDir, repoRoot } from "./paths.ts";

export const resultsDir = join(benchDir, "results");
/** The chart docs/performance.md shows; redrawn by every full run. */
export const chartPath = join(repoRoot, "docs", "performance.svg");

/** `latest` for a full run; a part run alone writes `<part>.json` and leaves latest.json be. */
export async function writeResults(name: string, results: unknown): Promise<string> {
  await mkdir(resultsDir, { recursive: true });
  const path = join(resultsDir, `${name}.json`);
  await writeFile(path, `${JSON.stringify(results, null, 2)}\n`);
  return path;
}

export async function writeChart(svg: string): Promise<string> {
  await writeFile(chartPath, svg);
  return chartPath;
}
