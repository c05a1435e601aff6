// `npm run bench`: tools/call throughput and latency of Atrium's files__info against the bare MCP
// SDK doing the same work (what Atrium adds) and a plain hono route (what one Node process can do),
// and Atrium again with an OAuth access token on every request (what the token checks add), each
// in both protocol eras (2025-11-25 and 2026-07-28).

import { formatConversations, runConversationsBench } from "./conversations.ts";
import { benchTarget, type TargetPlan } from "./lib/bench-target.ts";
import { installSignalCleanup, releaseAll } from "./lib/cleanup.ts";
import { formatTable } from "./lib/format-table.ts";
import { createMetadataFixture } from "./lib/metadata-fixture.ts";
import { progress } from "./lib/progress.ts";
import { buildResults, sampleLoadAverage, type TargetResult } from "./lib/results.ts";
import { readLoadSettings } from "./lib/settings.ts";
import { atriumAvailable, atriumBin, startAtrium } from "./lib/start-atrium.ts";
import { startBenchServer } from "./lib/start-bench-server.ts";
import type { TargetKey } from "./lib/target.ts";
import { writeResults } from "./lib/write-results.ts";
import { formatRemote, runRemoteBench } from "./remote.ts";
import { formatScale, runScaleBench } from "./scale.ts";

/** The cost of many workspaces: boot and bare-id lookups at 10 and 10,000 (bench/scale.ts). */
async function scale(): Promise<void> {
  const rows = await runScaleBench();
  process.stdout.write(`\n${formatScale(rows)}`);
}

/** What a connection's call gate adds to a remote tool call (bench/remote.ts). */
async function remote(): Promise<void> {
  process.stdout.write(`\n${formatRemote(await runRemoteBench())}`);
}

/** Appends, lists and searches with 10,000 conversations (bench/conversations.ts). */
async function conversations(): Promise<void> {
  process.stdout.write(`\n${formatConversations(await runConversationsBench())}`);
}

async function main(): Promise<void> {
  // `npm run bench -- scale` runs only the workspace-count benchmark, `-- load` only the load,
  // `-- remote` only the connection gate, `-- conversations` only the conversations store.
  if (process.argv.includes("scale")) return scale();
  if (process.argv.includes("remote")) return remote();
  if (process.argv.includes("conversations")) return conversations();
  const settings = readLoadSettings();
  const loadAverageAtStart = sampleLoadAverage();
  const fixture = await createMetadataFixture();

  const plans: TargetPlan[] = [
    { key: "bare-sdk", label: "bare-sdk", start: () => startBenchServer("bare-sdk", "info", fixture) },
    {
      key: "plain-hono",
      label: "plain-hono (ceiling)",
      start: () => startBenchServer("plain-hono", "info", fixture),
    },
  ];
  // The two Atrium targets run back to back, so the token path's cost is the difference between
  // neighbouring measurements rather than between the first and last of the run.
  const atriumPlans: TargetPlan[] = [
    { key: "atrium", label: "atrium", start: () => startAtrium("none") },
    { key: "atrium-oauth", label: "atrium-oauth", start: () => startAtrium("access-token") },
  ];
  const skipped: Array<{ key: TargetKey; reason: string }> = [];
  if (atriumAvailable()) {
    plans.push(...atriumPlans);
  } else {
    for (const { key } of atriumPlans) {
      skipped.push({ key, reason: `${atriumBin} does not exist yet` });
      progress(`${key}: skipped — ${atriumBin} does not exist yet`);
    }
  }

  const measured: TargetResult[] = [];
  for (const plan of plans) measured.push(...(await benchTarget(plan, settings)));

  const results = buildResults(loadAverageAtStart, settings, measured, skipped);
  const path = await writeResults(results);
  process.stdout.write(`\n${formatTable(results)}`);
  progress(`results written to ${path}`);
  if (!process.argv.includes("load")) {
    await scale();
    await remote();
    await conversations();
  }
}

installSignalCleanup((signal) => progress(`\n${signal}: stopping servers and removing temp dirs`));
try {
  await main();
} catch (error) {
  progress(`\nbench failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
} finally {
  await releaseAll();
}
