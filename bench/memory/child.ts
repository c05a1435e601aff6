// Run by bench/memory/measure.ts as `node --expose-gc --import tsx bench/memory/child.ts <root> <instance.json>`:
// Atrium in this very process (startAtrium, not a child), so its heap can be read after a full
// gc with no debug route in Atrium. Touches every workspace of the root once (one tools/list,
// which builds its sources), then lets the idle sweep evict them by moving Atrium's clock, and
// prints the three heap figures as one JSON line on stdout.

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
 * One tools/list. A pooled connection the server closed as idle (a long gc pause with thousands
 * of workspaces in memory) resets on reuse; the request is read-only, so it is sent again.
 */
async function listTools(url: string, attempt = 1): Promise<void> {
  let response: Response;
  try {
    response = await fetch(url, rpcRequest({ url, method: "tools/list" }, "2025-11-25"));
  } catch (error) {
    const code = (error as { cause?: { code?: string } }).cause?.code;
    if (code === "ECONNRESET" && attempt < 3) return listTools(url, attempt + 1);
    throw error;
  }
  const text = await response.text();
  if (!response.ok || !looksSuccessful(text))
    throw new Error(`tools/list at ${url}: HTTP ${response.status}: ${text.slice(0, 300)}`);
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
} finally {
  await atrium.close();
}
