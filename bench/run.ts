// `npm run bench`: every row of issue 15's goal table in one run, each as a ratio against a
// baseline the bench runs itself (docs/performance.md). Prints the goal table, writes
// bench/results/latest.json and draws docs/performance.svg; then the workspace-count and
// connection-gate parts. `npm run bench -- <part>` runs one part: load, transfer, memory (the
// goal rows; `goals` runs the three; `opening` only initialize / server/discover), skills (what
// skills/list costs: no goal, in the load table and the chart), scale, remote, conversations.
import { loadavg } from "node:os";
import { formatConversations, runConversationsBench } from "./conversations.ts";
import { chartPanels, drawChart } from "./lib/chart-svg.ts";
import { installSignalCleanup, releaseAll } from "./lib/cleanup.ts";
import { formatConditions, formatGoalTable, formatLoadTable } from "./lib/format-table.ts";
import { goalRows } from "./lib/goals.ts";
import { OPENING_BASELINE } from "./lib/opening-baseline.ts";
import { progress } from "./lib/progress.ts";
import { type BenchReport, describeMachine } from "./lib/report.ts";
import { readLoadSettings } from "./lib/settings.ts";
import { writeChart, writeResults } from "./lib/write-results.ts";
import { runLoadBench } from "./load.ts";
import { runMemoryBench } from "./memory/measure.ts";
import { formatRemote, runRemoteBench } from "./remote.ts";
import { formatScale, runScaleBench } from "./scale.ts";
import { runSkillsBench } from "./skills.ts";
import { runTransferBench } from "./transfer.ts";

const PARTS = [
  "load",
  "opening",
  "transfer",
  "memory",
  "goals",
  "skills",
  "scale",
  "remote",
  "conversations",
] as const;
type Part = (typeof PARTS)[number];

function chosenPart(argv: string[]): Part | undefined {
  const named = argv.slice(2).filter((arg) => !arg.startsWith("-"));
  if (named.length === 0) return undefined;
  const [part] = named;
  if (named.length > 1 || !PARTS.includes(part as Part))
    throw new Error(
      `Name one part of ${PARTS.join(", ")}, or none for the whole bench; got "${named.join(" ")}".`,
    );
  return part as Part;
}

const errorOf = (error: unknown) => ({ error: error instanceof Error ? error.message : String(error) });

async function goals(part: Part | undefined): Promise<void> {
  const settings = readLoadSettings();
  const report: BenchReport = {
    startedAt: new Date().toISOString(),
    machine: describeMachine(),
    settings,
    openingBaseline: OPENING_BASELINE,
    loads: [],
  };
  const all = part === undefined || part === "goals";
  if (all || part === "load" || part === "opening" || part === "transfer") {
    // The transfer part needs the Atrium the load part sets up; alone, it skips the load rows.
    // `opening` is only the initialize / server/discover rows (how OPENING_BASELINE was measured).
    const groups =
      part === "transfer" ? [] : part === "opening" ? (["opening", "opening-token"] as const) : undefined;
    const loaded = await runLoadBench(settings, groups && [...groups]);
    report.loads = loaded.rows;
    if (all || part === "transfer") {
      report.transfer = await runTransferBench(loaded.atrium).catch(errorOf);
    }
    await releaseAll();
  }
  if (all || part === "skills") {
    report.loads.push(...(await runSkillsBench(settings)));
    await releaseAll();
  }
  if (all || part === "memory") report.memory = await runMemoryBench().catch(errorOf);
  report.finishedAt = new Date().toISOString();
  report.machine.loadAverageAtEnd = loadavg()[0] ?? 0;

  const rows = goalRows(report);
  const path = await writeResults(all ? "latest" : (part ?? "latest"), { ...report, goals: rows });
  // The skills part has no goal row: its table would only say "not measured" of every other.
  const judged = part === "skills" ? "" : `${formatGoalTable(rows)}\n\n`;
  process.stdout.write(`\n${formatLoadTable(report.loads)}\n\n${judged}${formatConditions(report)}\n`);
  progress(`results written to ${path}`);
  if (all)
    progress(`chart drawn to ${await writeChart(drawChart(chartPanels(report), chartCaption(report)))}`);
}

function chartCaption(report: BenchReport): string {
  const { machine, settings } = report;
  return (
    `${report.startedAt.slice(0, 10)}: ${machine.cpus} × ${machine.cpuModel}, Node ${machine.node}, ` +
    `load average ${machine.loadAverageAtStart.toFixed(1)}, ${settings.seconds}s per target, ${settings.connections} connections`
  );
}

async function main(): Promise<void> {
  const part = chosenPart(process.argv);
  if (part === "scale") return void process.stdout.write(`\n${formatScale(await runScaleBench())}`);
  if (part === "remote") return void process.stdout.write(`\n${formatRemote(await runRemoteBench())}`);
  if (part === "conversations")
    return void process.stdout.write(`\n${formatConversations(await runConversationsBench())}`);
  await goals(part);
  if (part === undefined) {
    process.stdout.write(`\n${formatScale(await runScaleBench())}`);
    process.stdout.write(`\n${formatRemote(await runRemoteBench())}`);
    process.stdout.write(`\n${formatConversations(await runConversationsBench())}`);
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
