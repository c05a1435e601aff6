import { callTool } from "./call-tool.ts";
import { release } from "./cleanup.ts";
import { type LoadSettings, runLoad } from "./load-test.ts";
import { progress } from "./progress.ts";
import type { TargetResult } from "./results.ts";
import type { RunningTarget, TargetKey } from "./target.ts";

export interface TargetPlan {
  key: TargetKey;
  label: string;
  start: () => Promise<RunningTarget>;
}

// One server at a time: start, prove one call succeeds, load it, stop it — so no idle server
// competes for the two cores while another is measured.
export async function benchTarget(plan: TargetPlan, settings: LoadSettings): Promise<TargetResult> {
  progress(`${plan.label}: starting`);
  const target = await plan.start();
  try {
    await callTool(target.call);
    progress(`${plan.label}: pre-flight ok; loading ${target.call.tool} at ${target.call.url}`);
    const stats = await runLoad(target.call, settings);
    progress(
      `${plan.label}: ${stats.requestsPerSec.toFixed(0)} req/s, p50 ${stats.p50Ms.toFixed(2)} ms, p99 ${stats.p99Ms.toFixed(2)} ms`,
    );
    return { key: plan.key, label: plan.label, tool: target.call.tool, stats };
  } catch (error) {
    // Name the server and include what it printed: the usual cause is on its side.
    const output = target.server.output.toString();
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(`${plan.label}: ${message}${output ? `\n--- ${plan.key} output ---\n${output}` : ""}`);
  } finally {
    await release(target.server);
  }
}
