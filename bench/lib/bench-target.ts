import { callTool } from "./call-tool.ts";
import { release } from "./cleanup.ts";
import { type LoadSettings, runLoad } from "./load-test.ts";
import { progress } from "./progress.ts";
import type { TargetResult } from "./results.ts";
import type { RunningTarget, TargetKey } from "./target.ts";
import { ERAS, type Era } from "./tool-call.ts";

export interface TargetPlan {
  key: TargetKey;
  label: string;
  start: () => Promise<RunningTarget>;
}

// One server at a time: start, then for each era prove one call succeeds and load it, then stop
// it — so no idle server competes for the two cores while another is measured, and both eras of
// one server are measured back to back. An era a server does not serve becomes that row's error
// (the other rows still run); a server that does not start fails the whole bench.
export async function benchTarget(plan: TargetPlan, settings: LoadSettings): Promise<TargetResult[]> {
  progress(`${plan.label}: starting`);
  const target = await plan.start();
  try {
    const rows: TargetResult[] = [];
    for (const era of ERAS) rows.push(await benchEra(plan, target, era, settings));
    return rows;
  } finally {
    await release(target.server);
  }
}

async function benchEra(
  plan: TargetPlan,
  target: RunningTarget,
  era: Era,
  settings: LoadSettings,
): Promise<TargetResult> {
  const row = { key: plan.key, label: plan.label, era, tool: target.call.tool };
  const name = `${plan.label} ${era}`;
  try {
    await callTool(target.call, era);
    progress(`${name}: pre-flight ok; loading ${target.call.tool} at ${target.call.url}`);
    const stats = await runLoad(target.call, era, settings, target.server.cpuUs);
    progress(
      `${name}: ${stats.requestsPerSec.toFixed(0)} req/s, p50 ${stats.p50Ms.toFixed(2)} ms, p99 ${stats.p99Ms.toFixed(2)} ms, ` +
        `server CPU ${stats.serverCpuUsPerRequest?.toFixed(0) ?? "?"} µs/request`,
    );
    return { ...row, stats };
  } catch (error) {
    // Name the server and include what it printed: the usual cause is on its side.
    const message = error instanceof Error ? error.message : String(error);
    const output = target.server.output.toString();
    progress(`${name}: FAILED — ${message}${output ? `\n--- ${plan.key} output ---\n${output}` : ""}`);
    return { ...row, error: message };
  }
}
