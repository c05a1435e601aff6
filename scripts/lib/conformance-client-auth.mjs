// The client-authorization suites of scripts/conformance.mjs: the MCP conformance suite's `auth/*`
// client scenarios, each run against Atrium's OAuth client (scripts/conformance-client.ts, which
// drives src/platform/connections/oauth/). The suite starts its own MCP and authorization servers
// per scenario and runs the client command against them, so no Atrium is started for these.
//
//   client-auth       0.1.x: every `auth/*` client scenario it lists; `[extension]` ones are run
//                     and reported, not scored. Baseline expected-failures-client-auth.yml.
//   client-auth-2026  0.2.x: the `auth/*` client scenarios of the frozen 2026-07-28 requirement
//                     set, at that revision; the set's never-scored `auth/*` ones are run and
//                     reported. Baseline expected-failures-client-auth-2026.yml (per check).
//
// One suite process per scenario (its `--scenario`), one after another: `--suite auth` would run
// only the 0.1 core set, and `--requirements` runs the non-authorization client scenarios too.

import path from "node:path";
import { fileURLToPath } from "node:url";
import { listScenarios, runSuite, SuiteError } from "./conformance-run.mjs";
import { ROOT, SUITE_2025, SUITE_2026, TOOLS } from "./tools-install.mjs";

const REVISION_2026 = "2026-07-28";

// Node 20 (this process's) runs the TypeScript client through tsx, named by absolute path: the
// suite runs the command in its own working directory.
const CLIENT = path.join(ROOT, "scripts", "conformance-client.ts");
const TSX = fileURLToPath(import.meta.resolve("tsx"));
const quote = (arg) => `'${arg.replaceAll("'", "'\\''")}'`;
export const CLIENT_COMMAND = [process.execPath, "--import", TSX, CLIENT].map(quote).join(" ");

const AUTH = /^auth\//;

// `list --client`: `  - auth/x [2025-11-25]`, with `[extension]` for the optional extensions.
function listClient2025() {
  const text = listScenarios(SUITE_2025, ["list", "--client"], { raw: true });
  const lines = [...text.matchAll(/^\s+- (\S+)\s+\[([^\]]*)\]\s*$/gm)].filter((m) => AUTH.test(m[1]));
  if (!lines.length) throw new SuiteError(`list --client named no auth/* scenario:\n${text}`);
  return {
    scored: lines.filter((m) => m[2] !== "extension").map((m) => m[1]),
    notScored: lines.filter((m) => m[2] === "extension").map((m) => m[1]),
  };
}

// `list --requirements R`: the client section's `  - auth/x`, and `    - auth/x [client]` under
// "Run and reported, but never scored".
function listClient2026() {
  const text = listScenarios(SUITE_2026, ["list", "--requirements", REVISION_2026], { raw: true });
  const client = text.split(/^Client scenarios[^\n]*\n/m)[1]?.split(/^\S/m)[0] ?? "";
  const scored = [...client.matchAll(/^ {2}- (\S+)\s*$/gm)].map((m) => m[1]).filter((s) => AUTH.test(s));
  const notScored = [...text.matchAll(/^\s+- (\S+) \[client\]\s*$/gm)]
    .map((m) => m[1])
    .filter((s) => AUTH.test(s));
  if (!scored.length)
    throw new SuiteError(`list --requirements ${REVISION_2026} named no auth/* client scenario:\n${text}`);
  return { scored, notScored };
}

/**
 * Runs each scenario in its own suite process and merges them into one run for judgeSuite: the
 * output with a `=== Running scenario: x ===` line before each, one results folder. `code` is
 * null: there is no single exit code of the suite's to compare the table with.
 */
async function runEach({ name, script, specArgs, planned, dir, deadline, verbose, onStart, log }) {
  const resultsDir = path.join(dir, `results-${name}`);
  const merged = { code: null, timedOut: false, timeoutMs: 0, error: null, output: "", resultsDir };
  const scenarios = [...planned.scored, ...planned.notScored];
  for (const [index, scenario] of scenarios.entries()) {
    const timeoutMs = deadline - Date.now();
    if (timeoutMs <= 0) {
      merged.timedOut = true;
      break;
    }
    log(`${name}: ${scenario}`);
    const run = await runSuite({
      name: `${name}-${index + 1}`,
      script,
      args: [
        "client",
        "--command",
        CLIENT_COMMAND,
        "--scenario",
        scenario,
        ...specArgs,
        "--output-dir",
        resultsDir,
      ],
      dir,
      timeoutMs,
      verbose,
      onStart,
      log: () => {},
    });
    merged.output += `=== Running scenario: ${scenario} ===\n${run.output}\n`;
    merged.error ??= run.error;
    merged.timeoutMs = run.timeoutMs;
    if (run.timedOut) {
      merged.timedOut = true;
      break;
    }
  }
  return merged;
}

/** Suite entries for scripts/conformance.mjs's SUITES: same shape, plus `needsAtrium: false` and `run`. */
export const CLIENT_SUITES = {
  "client-auth": {
    title: "client authorization (@modelcontextprotocol/conformance 0.1.x, auth/* client scenarios)",
    script: SUITE_2025,
    baseline: path.join(TOOLS, "expected-failures-client-auth.yml"),
    baselineSection: "client",
    perCheck: false,
    required: ["auth/metadata-default", "auth/token-endpoint-auth-none", "auth/scope-step-up"],
    needsAtrium: false,
    list: listClient2025,
    resultPrefix: null,
    run: (ctx) => runEach({ ...ctx, name: "client-auth", script: SUITE_2025, specArgs: [] }),
  },
  "client-auth-2026": {
    title: `client authorization, ${REVISION_2026} (@modelcontextprotocol/conformance 0.2.x, auth/* of the requirement set)`,
    script: SUITE_2026,
    baseline: path.join(TOOLS, "expected-failures-client-auth-2026.yml"),
    baselineSection: "client",
    perCheck: true,
    required: [
      "auth/metadata-default",
      "auth/scope-step-up",
      "auth/iss-wrong-issuer",
      "auth/metadata-issuer-mismatch",
      "auth/resource-mismatch",
    ],
    needsAtrium: false,
    list: listClient2026,
    resultPrefix: null,
    // --force: the never-scored extension scenarios are off the spec timeline, and run anyway.
    run: (ctx) =>
      runEach({
        ...ctx,
        name: "client-auth-2026",
        script: SUITE_2026,
        specArgs: ["--spec-version", REVISION_2026, "--force"],
      }),
  },
};
