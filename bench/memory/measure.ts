// `npm run bench -- memory`: the heap of N workspaces (BENCH_MEMORY_WORKSPACES, default 10,000)
// touched once, then idle, then evicted. The figures come from a child process that runs Atrium
// in-process with --expose-gc (child.ts); this side builds the root and reads the child's answer.
import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { findFreePort } from "../lib/free-port.ts";
import { benchDir, repoRoot } from "../lib/paths.ts";
import { progress } from "../lib/progress.ts";
import type { MemoryResult } from "../lib/report.ts";
import { makeTempDir } from "../lib/temp-dir.ts";
import { buildWorkspaceRoot } from "../lib/workspace-root.ts";

const run = promisify(execFile);
const TIMEOUT_MS = 15 * 60_000;

export async function runMemoryBench(): Promise<MemoryResult> {
  const count = Number(process.env.BENCH_MEMORY_WORKSPACES ?? 10_000);
  if (!Number.isInteger(count) || count <= 0)
    throw new Error(
      `BENCH_MEMORY_WORKSPACES must be a positive whole number, got "${process.env.BENCH_MEMORY_WORKSPACES}"`,
    );
  const temp = await makeTempDir("atrium-bench-memory");
  const root = join(temp.path, "data");
  progress(`memory: building a root with ${count} workspaces`);
  await buildWorkspaceRoot(root, count);
  const port = await findFreePort();
  const instancePath = join(temp.path, "instance.json");
  const base = `http://127.0.0.1:${port}`;
  await writeFile(
    instancePath,
    JSON.stringify({
      auth: { adapter: "dev" },
      storage: { root },
      http: { host: "127.0.0.1", port, publicUrl: base },
    }),
  );
  progress("memory: touching every workspace once in a child with --expose-gc");
  const { stdout } = await run(
    process.execPath,
    ["--expose-gc", "--import", "tsx", join(benchDir, "memory", "child.ts"), instancePath],
    { cwd: repoRoot, timeout: TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 },
  ).catch((error: { stderr?: string; message?: string }) => {
    // The child's stack trace is long; its last lines say what went wrong.
    const tail = (error.stderr ?? "").trim().split("\n").slice(-3).join("\n");
    throw new Error(`the memory child failed: ${tail || error.message}`);
  });
  const line = stdout.trim().split("\n").at(-1) ?? "";
  const measured = JSON.parse(line) as MemoryResult & { built: number; left: number };
  if (measured.built !== count || measured.left !== 0)
    throw new Error(
      `memory: ${measured.built} of ${count} workspaces were built and ${measured.left} left after the sweep`,
    );
  const kb = (bytes: number) => (bytes / count / 1024).toFixed(2);
  progress(
    `memory: ${kb(measured.touchedHeapBytes - measured.idleHeapBytes)} KB heap per workspace touched, ` +
      `${kb(measured.evictedHeapBytes - measured.idleHeapBytes)} KB after eviction`,
  );
  return {
    workspaces: count,
    idleHeapBytes: measured.idleHeapBytes,
    touchedHeapBytes: measured.touchedHeapBytes,
    evictedHeapBytes: measured.evictedHeapBytes,
  };
}
