// Run by bench/memory/measure.ts as `node --expose-gc --import tsx bench/memory/child.ts <instance.json>`:
// Atrium in this very process (startAtrium, not a child), so its heap can be read after a full
// gc with no debug route in Atrium. After one warm-up workspace, touches every workspace of the
// root once (one tools/list, which builds its sources), then lets the idle sweep evict them by
// moving Atrium's clock, and prints the three heap figures as one JSON line on stdout.

import { request as httpRequest } from "node:http";
import { loadInstance } from "../../src/instance/load.ts";
import { createLogger } from "../../src/log.ts";
import { PLATFORM_APPS } from "../../src/platform/index.ts";
import { configSections } from "../../src/platform/kit.ts";
import { IDLE_EVICT_MS, startAtrium } from "../../src/server.ts";
import { rpcRequest } from "../lib/rpc-request.ts";
import { looksSuccessful } from "../lib/tool-result.ts";

const TOUCH_CONCURRENCY = 16;

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
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method, headers, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.once("error", reject);
      response.once("end", () => {
        const text = Buffer.concat(chunks).toString();
        const status = response.statusCode ?? 0;
        if (status === 200 && looksSuccessful(text)) resolve();
        else reject(new Error(`tools/list at ${url}: HTTP ${status}: ${text.slice(0, 300)}`));
      });
    });
    request.once("error", reject);
    request.end(body);
  });
}

const [instancePath] = process.argv.slice(2);
if (!instancePath) throw new Error("usage: child.ts <instance.json>");
const config = await loadInstance(instancePath, { sections: configSections(PLATFORM_APPS) });
let clockOffsetMs = 0;
const atrium = await startAtrium(config, {
  clock: () => Date.now() + clockOffsetMs,
  log: createLogger("silent"),
});
try {
  const ids = atrium.workspaces.ids();
  // What the instance builds once, on its first request to any workspace (compiled code, each
  // app's one server, its tool list), is not a workspace's cost: one workspace is touched and
  // evicted before the baseline, so the figures are what each further workspace adds and keeps.
  const [first] = ids;
  if (first) await listTools(`${atrium.url}/mcp/${first}`);
  clockOffsetMs += IDLE_EVICT_MS + 1;
  await atrium.registries.sweep();
  const idleHeapBytes = heapAfterGc();
  let next = 0;
  const touch = async () => {
    while (next < ids.length) {
      await listTools(`${atrium.url}/mcp/${ids[next++]}`);
    }
  };
  await Promise.all(Array.from({ length: TOUCH_CONCURRENCY }, touch));
  const built = atrium.registries.size;
  const touchedHeapBytes = heapAfterGc();
  clockOffsetMs += IDLE_EVICT_MS + 1;
  await atrium.registries.sweep();
  const left = atrium.registries.size;
  const evictedHeapBytes = heapAfterGc();
  process.stdout.write(
    `${JSON.stringify({ workspaces: ids.length, built, left, idleHeapBytes, touchedHeapBytes, evictedHeapBytes })}\n`,
  );
} catch (error) {
  // One line the parent can quote, rather than a stack with a socket dump.
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  process.stderr.write(`${(error as Error).message}${cause ? ` (${cause.code ?? cause.message})` : ""}\n`);
  process.exitCode = 1;
} finally {
  await atrium.close();
}
