import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { benchDir } from "./paths.ts";
import type { BenchResults } from "./results.ts";

export const resultsPath = join(benchDir, "results", "latest.json");

export async function writeResults(results: BenchResults): Promise<string> {
  await mkdir(join(benchDir, "results"), { recursive: true });
  await writeFile(resultsPath, `${JSON.stringify(results, null, 2)}\n`);
  return resultsPath;
}
