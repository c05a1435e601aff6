// The cost of many workspaces (issue 10, Reliability 4 and 7): boot time, and bare-id file
// lookups (GET /v1/files/:id/meta) for a file in the newest workspace and for an unknown id,
// at a small root and a large one where the caller belongs to every workspace. Each size gets
// its own root and fresh Atrium processes. Run by `npm run bench` (after the load targets) or
// alone with `npm run bench -- scale`; SCALE_WORKSPACES sets the large size (default 10,000).
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { type ChildServer, spawnServer } from "./lib/child-server.ts";
import { release } from "./lib/cleanup.ts";
import { findFreePort } from "./lib/free-port.ts";
import { repoRoot } from "./lib/paths.ts";
import { percentile } from "./lib/percentile.ts";
import { progress } from "./lib/progress.ts";
import { atriumBin } from "./lib/start-atrium.ts";
import { makeTempDir } from "./lib/temp-dir.ts";
import { buildWorkspaceRoot } from "./lib/workspace-root.ts";

const SMALL = 10;
const BOOTS = 3;
const LOOKUPS = 300;
const WARMUP_LOOKUPS = 30;
const UNKNOWN_ID = "fl_ffffffffffffffffffffffff";

export interface ScaleRow {
  workspaces: number;
  bootMsMedian: number;
  newestFileP50Ms: number;
  unknownIdP50Ms: number;
}

/** A root where the developer belongs to `count` workspaces, each holding one of their files. */
async function buildRoot(root: string, count: number): Promise<string> {
  return (await buildWorkspaceRoot(root, count)).newestFile;
}

/** Spawns `atrium serve` on `root` and answers the milliseconds until /v1/health says 200. */
async function boot(dir: string, root: string): Promise<{ server: ChildServer; ms: number; base: string }> {
  const port = await findFreePort();
  const base = `http://127.0.0.1:${port}`;
  const instancePath = join(dir, "instance.json");
  const instance = {
    auth: { adapter: "dev" },
    storage: { root },
    http: { host: "127.0.0.1", port, publicUrl: base },
    log: { level: "warn" },
  };
  await writeFile(instancePath, JSON.stringify(instance));
  const started = performance.now();
  const server = spawnServer({
    name: "atrium-scale",
    cwd: repoRoot,
    args: [atriumBin, "serve", "--instance", instancePath, "--data", root],
    keepStdinOpen: false,
  });
  for (;;) {
    const exited = server.exited();
    if (exited) throw new Error(`atrium ${exited} during boot.\n${server.output}`);
    const ok = await fetch(`${base}/v1/health`)
      .then(async (r) => {
        await r.arrayBuffer();
        return r.status === 200;
      })
      .catch(() => false);
    if (ok) return { server, ms: performance.now() - started, base };
    if (performance.now() - started > 120_000)
      throw new Error(`atrium did not boot in 120 s.\n${server.output}`);
    await sleep(5);
  }
}

async function lookupP50(url: string, expected: number): Promise<number> {
  const samples = new Float64Array(LOOKUPS);
  for (let i = -WARMUP_LOOKUPS; i < LOOKUPS; i++) {
    const started = performance.now();
    const response = await fetch(url);
    await response.arrayBuffer();
    if (response.status !== expected)
      throw new Error(`${url}: HTTP ${response.status}, expected ${expected}`);
    if (i >= 0) samples[i] = performance.now() - started;
  }
  return percentile(samples.sort(), 50);
}

async function measure(count: number): Promise<ScaleRow> {
  const temp = await makeTempDir("atrium-bench-scale");
  try {
    const root = join(temp.path, "data");
    progress(`scale: building a root with ${count} workspaces`);
    const newest = await buildRoot(root, count);
    const boots: number[] = [];
    let row: ScaleRow | undefined;
    for (let i = 0; i < BOOTS; i++) {
      const { server, ms, base } = await boot(temp.path, root);
      boots.push(ms);
      if (i === BOOTS - 1) {
        const newestFileP50Ms = await lookupP50(`${base}/v1/files/${newest}/meta`, 200);
        const unknownIdP50Ms = await lookupP50(`${base}/v1/files/${UNKNOWN_ID}/meta`, 404);
        row = { workspaces: count, bootMsMedian: 0, newestFileP50Ms, unknownIdP50Ms };
      }
      await release(server);
    }
    const sorted = boots.sort((a, b) => a - b);
    return { ...(row as ScaleRow), bootMsMedian: sorted[Math.floor(sorted.length / 2)] ?? Number.NaN };
  } finally {
    await release(temp);
  }
}

export async function runScaleBench(): Promise<ScaleRow[]> {
  const large = Number(process.env.SCALE_WORKSPACES ?? 10_000);
  return [await measure(SMALL), await measure(large)];
}

export function formatScale(rows: ScaleRow[]): string {
  const lines = [
    "| workspaces | boot ms (median of 3) | bare id, newest ws, p50 ms | unknown id, p50 ms |",
    "|---|---|---|---|",
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.workspaces} | ${r.bootMsMedian.toFixed(0)} | ${r.newestFileP50Ms.toFixed(2)} | ${r.unknownIdP50Ms.toFixed(2)} |`,
    );
  }
  const [small, large] = rows;
  if (small && large) {
    lines.push(
      "",
      `large/small: boot ${(large.bootMsMedian / small.bootMsMedian).toFixed(2)}×, ` +
        `bare id ${(large.newestFileP50Ms / small.newestFileP50Ms).toFixed(2)}×, ` +
        `unknown id ${(large.unknownIdP50Ms / small.unknownIdP50Ms).toFixed(2)}×`,
    );
  }
  return `${lines.join("\n")}\n`;
}
