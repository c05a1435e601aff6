// Running one conformance suite under Node 22 and reading what it found: its scenario lists,
// the run itself (bounded, in its own process group), the per-scenario checks.json files, and
// the table scripts/conformance.mjs prints with each baseline entry's reason.

import { spawnSync } from "node:child_process";
import { createWriteStream, existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { judgeScenario, scenarioOf } from "./conformance-baseline.mjs";
import { startGroup, stopGroup, tailLines } from "./dev-atrium.mjs";
import { NODE22 } from "./tools-install.mjs";

export class SuiteError extends Error {}

const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");

/** Scenario names a `list` invocation prints as `  - name [versions]`; `raw` returns the text. */
export function listScenarios(script, args, { raw = false } = {}) {
  const r = spawnSync(NODE22, [script, ...args], { encoding: "utf8" });
  if (r.status !== 0) throw new SuiteError(`conformance ${args.join(" ")} failed: ${r.stderr || r.stdout}`);
  if (raw) return r.stdout;
  const names = [...r.stdout.matchAll(/^\s+- (\S+)/gm)].map((m) => m[1]);
  if (!names.length) throw new SuiteError(`conformance ${args.join(" ")} named no scenario:\n${r.stdout}`);
  return names;
}

export function listAuthorization(script) {
  const text = listScenarios(script, ["list", "--authorization"], { raw: true });
  const names = [...text.matchAll(/^\s+- (\S+)/gm)].map((m) => m[1]);
  if (!names.length) throw new SuiteError(`conformance list --authorization named no scenario:\n${text}`);
  return names;
}

/**
 * Run the suite. `onOutput(output, fail)` sees the whole output so far after each chunk; calling
 * `fail(message)` stops the suite and records why.
 */
export async function runSuite({ name, script, args, dir, timeoutMs, verbose, onOutput, onStart, log }) {
  const resultsDir = args[args.indexOf("--output-dir") + 1];
  log(`running ${path.basename(path.dirname(path.dirname(script)))} ${args.join(" ")}`);
  const child = startGroup(NODE22, [script, ...args], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
  onStart(child);
  const suiteLog = createWriteStream(path.join(dir, `suite-${name}.log`));
  let output = "";
  let error = null;
  const fail = (message) => {
    error ??= message;
    stopGroup(child);
  };
  const capture = (chunk) => {
    suiteLog.write(chunk);
    output += chunk.toString();
    if (verbose) process.stdout.write(chunk);
    onOutput?.(output.replace(ANSI, ""), fail);
  };
  child.stdout.on("data", capture);
  child.stderr.on("data", capture);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    stopGroup(child);
  }, timeoutMs);
  const code = await new Promise((resolve) => {
    child.on("error", (err) => resolve(err.message));
    child.on("close", (c, sig) => resolve(c ?? sig));
  });
  clearTimeout(timer);
  await new Promise((resolve) => suiteLog.end(resolve));
  return { code, timedOut, timeoutMs, error, output: output.replace(ANSI, ""), resultsDir };
}

// Each scenario's checks, in the order the suite ran them; a scenario without checks.json did
// not finish. Server runs write `<prefix>-<scenario>-<time>/`; client runs (prefix null) write
// `<scenario>-<time>/`, where a scenario named `auth/x` is the folder `auth/` holding `x-<time>/`.
function collect(output, resultsDir, prefix) {
  const order = [...output.matchAll(/^=== Running scenario: (\S+) ===$/gm)].map((m) => m[1]);
  const checks = new Map();
  const stamp = "-\\d{4}-\\d{2}-\\d{2}T[\\d-]+Z$";
  const dirName = new RegExp(prefix === null ? `^(.+)${stamp}` : `^${prefix}-(.+)${stamp}`);
  const read = (dir, namePrefix) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const m = entry.name.match(dirName);
      const file = path.join(dir, entry.name, "checks.json");
      if (m && existsSync(file)) checks.set(namePrefix + m[1], JSON.parse(readFileSync(file, "utf8")));
      else if (!m && prefix === null && !namePrefix) read(path.join(dir, entry.name), `${entry.name}/`);
    }
  };
  if (existsSync(resultsDir)) read(resultsDir, "");
  for (const name of checks.keys()) if (!order.includes(name)) order.push(name);
  return order.map((name) => ({ name, checks: checks.get(name) }));
}

const VERDICT = {
  pass: "PASS",
  expected: "expected failure",
  stale: "FAIL (passes but is in the baseline: remove it)",
  fail: "FAIL",
};

/** The table, the failures in detail, and the counts for one suite's run. */
export function judgeSuite({ scored, notScored, baseline, run, resultPrefix, baselineFile }) {
  const results = collect(run.output, run.resultsDir, resultPrefix);
  const lines = [];
  const details = [];
  let passed = 0;
  let expected = 0;
  let failed = 0;
  let notScoredPassed = 0;
  for (const r of results) {
    if (notScored.includes(r.name)) {
      const ok = judgeScenario(r, new Map()).verdict === "pass";
      if (ok) notScoredPassed++;
      lines.push(`  ${r.name.padEnd(46)} not scored (${ok ? "passes" : "fails"})`);
      continue;
    }
    const j = judgeScenario(r, baseline);
    if (j.verdict === "pass") passed++;
    else if (j.verdict === "expected") expected++;
    else failed++;
    const reasons =
      j.verdict === "expected"
        ? ` — ${j.expected.map((e) => `${e === r.name ? "" : `${e.slice(r.name.length + 1)}: `}${baseline.get(e)}`).join("; ")}`
        : "";
    lines.push(`  ${r.name.padEnd(46)} ${VERDICT[j.verdict]}${reasons}`);
    if (j.verdict === "fail" || j.verdict === "stale") {
      details.push(`\n--- ${r.name}`);
      for (const p of j.problems)
        details.push(`  ${p.status} ${p.id}: ${p.errorMessage ?? p.description ?? ""}`);
      for (const s of j.stale)
        details.push(
          `  ${s} passes; delete it from ${baselineFile ? path.basename(baselineFile) : "the baseline"}`,
        );
    }
  }
  const ran = new Set(results.map((r) => r.name));
  for (const s of scored.filter((s) => !ran.has(s))) {
    lines.push(`  ${s.padEnd(46)} FAIL (the suite did not run it)`);
    failed++;
  }
  lines.push(...details);

  // Anomalies of the run itself (not of a scenario): show the suite's own words.
  let anomaly = run.error;
  if (!anomaly && run.timedOut) anomaly = `the suite was stopped after ${run.timeoutMs} ms`;
  else if (!anomaly && !results.length) anomaly = `the suite ran no scenario (exit ${run.code})`;
  else if (
    !anomaly &&
    (results.some((r) => !r.checks && scored.includes(r.name)) || scored.some((s) => !ran.has(s)))
  )
    anomaly = "not every scenario ran to completion";
  else if (!anomaly && baselineFile && run.code !== null && (run.code === 0) !== (failed === 0))
    anomaly = `the suite exited with ${run.code}, which disagrees with the table above`;
  if (anomaly) {
    if (failed === 0) failed = 1;
    lines.push(`\n${anomaly}\n--- suite output (last 60 lines)`, tailLines(run.output, 60));
  }
  const stray = [...baseline.keys()].filter((e) => !ran.has(scenarioOf(e)));
  if (stray.length && !anomaly)
    lines.push(`\nbaseline entries whose scenario did not run: ${stray.join(", ")}`);
  return { lines, passed, expected, failed, notScoredPassed };
}
