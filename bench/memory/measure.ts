// `npm run bench -- memory`: the heap of N workspaces (BENCH_MEMORY_WORKSPACES, default 10,000),
// each with three files, a skill and one entry in its connections catalog, touched once, then
// idle, then evicted; then what a burst of listings of M full catalogs
// (BENCH_MEMORY_FULL_CATALOGS, default 40, 100 entries of 60 KiB each) holds. The figures come
// from a child process that runs Atrium in-process with --expose-gc (child.ts); this side builds
// the root and reads the child's answer.
import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { MAX_WORKSPACE_ENTRIES } from "../../src/platform/connections/catalog.ts";
import { findFreePort } from "../lib/free-port.ts";
import { benchDir, repoRoot } from "../lib/paths.ts";
import { progress } from "../lib/progress.ts";
import type { MemoryResult } from "../lib/report.ts";
import { makeTempDir } from "../lib/temp-dir.ts";
import { buildWorkspaceRoot } from "../lib/workspace-root.ts";

const run = promisify(execFile);
const TIMEOUT_MS = 15 * 60_000;
/** A full catalog's entries are padded to this: 64 KiB is the most one may take (MAX_ENTRY_BYTES). */
const FULL_ENTRY_BYTES = 60 * 1024;

function countFromEnv(name: string, fallback: number, least: number): number {
  const raw = process.env[name];
  const count = Number(raw ?? fallback);
  if (!Number.isInteger(count) || count < least)
    throw new Error(`${name} must be a whole number of at least ${least}, got "${raw}"`);
  return count;
}

export async function runMemoryBench(): Promise<MemoryResult> {
  const count = countFromEnv("BENCH_MEMORY_WORKSPACES", 10_000, 1);
  const fullCatalogs = countFromEnv("BENCH_MEMORY_FULL_CATALOGS", 40, 0);
  const temp = await makeTempDir("atrium-bench-memory");
  const root = join(temp.path, "data");
  progress(`memory: building a root with ${count} workspaces`);
  await buildWorkspaceRoot(root, count, { files: 3, skill: true, catalogEntries: 1 });
  await buildWorkspaceRoot(
    root,
    fullCatalogs,
    { catalogEntries: MAX_WORKSPACE_ENTRIES, catalogEntryBytes: FULL_ENTRY_BYTES },
    count + 1,
  );
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
    [
      "--expose-gc",
      "--import",
      "tsx",
      join(benchDir, "memory", "child.ts"),
      instancePath,
      String(fullCatalogs),
    ],
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
  const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
  progress(
    `memory: ${kb(measured.touchedHeapBytes - measured.idleHeapBytes)} KB heap per workspace touched, ` +
      `${kb(measured.evictedHeapBytes - measured.idleHeapBytes)} KB after eviction; ` +
      `${fullCatalogs} full catalogs listed hold ${mib(measured.fullCatalogsHeapBytes - measured.evictedHeapBytes)} MiB more`,
  );
  return {
    workspaces: count,
    fullCatalogs,
    idleHeapBytes: measured.idleHeapBytes,
    touchedHeapBytes: measured.touchedHeapBytes,
    evictedHeapBytes: measured.evictedHeapBytes,
    fullCatalogsHeapBytes: measured.fullCatalogsHeapBytes,
  };
}
