// Run by bench/memory/measure.ts as
// `node --expose-gc --import tsx bench/memory/child.ts <instance.json> <full catalogs>`:
// Atrium in this very process (startAtrium, not a child), so its heap can be read after a full
// gc with no debug route in Atrium. After one warm-up workspace, touches every ordinary workspace
// of the root once (one tools/list, which builds its sources, and one listing of its connections
// catalog), then lets every idle window pass on Atrium's fake clock and timers, firing each sweep
// that falls due on the way as a real instance's timers would (passIdleWindows). Then it lists the
// catalog of each of the last <full catalogs> workspaces, whose catalogs are full, as a burst
// of admins would, and prints the heap figures as one JSON line on stdout.

import { request as httpRequest } from "node:http";
import { loadInstance } from "../../src/instance/load.ts";
import { createLogger } from "../../src/log.ts";
import { CATALOG_INDEX_IDLE_MS, MAX_WORKSPACE_ENTRIES } from "../../src/platform/connections/catalog.ts";
import { PUBLISHED_SKILLS_IDLE_MS } from "../../src/platform/connections/published-skills.ts";
import { CONVERSATION_INDEX_IDLE_MS } from "../../src/platform/conversations/loaded-partitions.ts";
import { FILE_INDEX_IDLE_MS } from "../../src/platform/files/listings.ts";
import { PLATFORM_APPS } from "../../src/platform/index.ts";
import { configSections } from "../../src/platform/kit.ts";
import { SKILL_LISTING_IDLE_MS } from "../../src/platform/skills/scope-cache.ts";
import { TASKS_IDLE_MS } from "../../src/platform/tasks/store.ts";
import { IDLE_EVICT_MS, startAtrium } from "../../src/server.ts";
import { FakeTime } from "../../test/helpers/fake-time.ts";
import { rpcRequest } from "../lib/rpc-request.ts";
import { looksSuccessful } from "../lib/tool-result.ts";

const TOUCH_CONCURRENCY = 16;
/** The longest time any of Atrium's per-workspace caches keeps what it holds unused. */
const LONGEST_IDLE_MS = Math.max(
  IDLE_EVICT_MS,
  FILE_INDEX_IDLE_MS,
  CATALOG_INDEX_IDLE_MS,
  PUBLISHED_SKILLS_IDLE_MS,
  CONVERSATION_INDEX_IDLE_MS,
  TASKS_IDLE_MS,
  SKILL_LISTING_IDLE_MS,
);
/** Enough passes for a sweep that re-armed after its work (off the fake clock) to fall due again. */
const IDLE_PASSES = 3;

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with node --expose-gc");

/** Heap after full collections; twice, because the first can leave finalizer-held objects behind. */
function heapAfterGc(): number {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
}

/**
 * One tools/list, on a connection of its own (`agent: false`): with thousands of workspaces in
 * memory a gc pause can outlast the server's keep-alive, and a pooled connection it closed
 * meanwhile fails on reuse ("other side closed"). A fresh connection per request has no such race.
 */
function listTools(url: string): Promise<void> {
  const { method, headers, body } = rpcRequest({ url, method: "tools/list" }, "2025-11-25");
  return send(url, { method, headers, body }, looksSuccessful);
}

/** One `GET …/catalog` of a workspace, which must list `entries` of its own. */
function listCatalog(base: string, workspaceId: string, entries: number): Promise<void> {
  const url = `${base}/v1/workspaces/${workspaceId}/catalog`;
  const listsAll = (text: string) => (JSON.parse(text) as { servers: unknown[] }).servers.length === entries;
  return send(url, { method: "GET", headers: {} }, listsAll);
}

function send(
  url: string,
  { method, headers, body }: { method: string; headers: Record<string, string>; body?: string },
  answered: (text: string) => boolean,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method, headers, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.once("error", reject);
      response.once("end", () => {
        const text = Buffer.concat(chunks).toString();
        const status = response.statusCode ?? 0;
        if (status === 200 && answered(text)) resolve();
        else reject(new Error(`${method} ${url}: HTTP ${status}: ${text.slice(0, 300)}`));
      });
    });
    request.once("error", reject);
    request.end(body);
  });
}

const [instancePath, fullCatalogsArg] = process.argv.slice(2);
if (!instancePath || !fullCatalogsArg) throw new Error("usage: child.ts <instance.json> <full catalogs>");
const fullCatalogs = Number(fullCatalogsArg);
const config = await loadInstance(instancePath, { sections: configSections(PLATFORM_APPS) });
// Every cache sweeps on the instance's timers: on these, each sweep falls due as the clock moves,
// so what is left is what a real instance keeps after its idle windows, not what merely has not
// been swept yet. The lock's heartbeat and HTTP keep Node's own timers.
const time = new FakeTime(Date.now());
const atrium = await startAtrium(config, {
  clock: time.clock,
  timers: time.timers,
  log: createLogger("silent"),
});

/**
 * Moves the clock past the longest idle window twice over (a sweep runs every half window, so one
 * may come up to half a window after an entry's idle time), firing every timer due on the way;
 * then again, for sweeps whose work outlasted FakeTime's settling and re-armed late.
 */
async function passIdleWindows(): Promise<void> {
  for (let pass = 0; pass < IDLE_PASSES; pass++) {
    await time.advance(2 * LONGEST_IDLE_MS);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
try {
  // Fixed-width ids: their order is the order the root was written in, the full catalogs last.
  const all = [...atrium.workspaces.ids()].sort();
  const ids = all.slice(0, all.length - fullCatalogs);
  const full = all.slice(all.length - fullCatalogs);
  // What the instance builds once, on its first request to any workspace (compiled code, each
  // app's one server, its tool list), is not a workspace's cost: one workspace is touched and
  // evicted before the baseline, so the figures are what each further workspace adds and keeps.
  const [first] = ids;
  if (first) {
    await listTools(`${atrium.url}/mcp/${first}`);
    await listCatalog(atrium.url, first, 1);
  }
  await passIdleWindows();
  const idleHeapBytes = heapAfterGc();
  let next = 0;
  const touch = async () => {
    while (next < ids.length) {
      const id = ids[next++] as string;
      await listTools(`${atrium.url}/mcp/${id}`);
      await listCatalog(atrium.url, id, 1);
    }
  };
  await Promise.all(Array.from({ length: TOUCH_CONCURRENCY }, touch));
  const built = atrium.registries.size;
  const touchedHeapBytes = heapAfterGc();
  await passIdleWindows();
  const left = atrium.registries.size;
  const evictedHeapBytes = heapAfterGc();
  // The burst: each full catalog read and held within its idle time, all at once.
  for (const id of full) await listCatalog(atrium.url, id, MAX_WORKSPACE_ENTRIES);
  const fullCatalogsHeapBytes = heapAfterGc();
  const figures = { built, left, idleHeapBytes, touchedHeapBytes, evictedHeapBytes, fullCatalogsHeapBytes };
  process.stdout.write(`${JSON.stringify({ workspaces: ids.length, fullCatalogs, ...figures })}\n`);
} catch (error) {
  // One line the parent can quote, rather than a stack with a socket dump.
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  process.stderr.write(`${(error as Error).message}${cause ? ` (${cause.code ?? cause.message})` : ""}\n`);
  process.exitCode = 1;
} finally {
  await atrium.close();
}
