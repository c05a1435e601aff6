import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { judgeSuite, type SuiteRun } from "../../../scripts/lib/conformance-run.mjs";

const STAMP = "2026-12-03T18-00-00-000Z";
let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "atrium-conformance-run-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function writeChecks(folder: string, checks: Array<{ id: string; status: string }>): void {
  mkdirSync(join(dir, folder), { recursive: true });
  writeFileSync(join(dir, folder, "checks.json"), JSON.stringify(checks));
}

function run(scenarios: string[], code: SuiteRun["code"] = null): SuiteRun {
  const output = scenarios.map((s) => `=== Running scenario: ${s} ===\n`).join("");
  return { code, timedOut: false, error: null, output, resultsDir: dir };
}

describe("judgeSuite", () => {
  it("reads a client run's results, where a scenario auth/x is the folder auth/x-<time>", () => {
    writeChecks(`auth/passes-${STAMP}`, [{ id: "token-request", status: "SUCCESS" }]);
    writeChecks(`auth/fails-${STAMP}`, [{ id: "iss-check", status: "FAILURE" }]);
    writeChecks(`auth/extension-${STAMP}`, [{ id: "grant", status: "FAILURE" }]);
    const report = judgeSuite({
      scored: ["auth/passes", "auth/fails", "auth/never-ran"],
      notScored: ["auth/extension"],
      baseline: new Map(),
      run: run(["auth/passes", "auth/fails", "auth/never-ran", "auth/extension"]),
      resultPrefix: null,
      baselineFile: "b.yml",
    });
    expect(report).toMatchObject({ passed: 1, failed: 2, notScoredPassed: 0 });
    expect(report.lines.join("\n")).toMatch(/auth\/passes +PASS/);
    expect(report.lines.join("\n")).toMatch(/FAILURE iss-check/);
    expect(report.lines.join("\n")).toMatch(/no checks.json/);
    expect(report.lines.join("\n")).toMatch(/auth\/extension +not scored \(fails\)/);
  });

  it("still reads a server run's <prefix>-<scenario>-<time> folders, and not a client layout there", () => {
    writeChecks(`server-tools-list-${STAMP}`, [{ id: "tools-list", status: "SUCCESS" }]);
    writeChecks(`auth/nested-${STAMP}`, [{ id: "x", status: "SUCCESS" }]);
    const report = judgeSuite({
      scored: ["tools-list"],
      notScored: [],
      baseline: new Map(),
      run: run(["tools-list"], 0),
      resultPrefix: "server",
      baselineFile: "b.yml",
    });
    expect(report).toMatchObject({ passed: 1, failed: 0 });
    expect(report.lines.join("\n")).not.toMatch(/nested/);
  });

  it("compares the suite's exit code with the table only when there is one", () => {
    writeChecks(`server-tools-list-${STAMP}`, [{ id: "tools-list", status: "SUCCESS" }]);
    const judged = (code: SuiteRun["code"]) =>
      judgeSuite({
        scored: ["tools-list"],
        notScored: [],
        baseline: new Map(),
        run: run(["tools-list"], code),
        resultPrefix: "server",
        baselineFile: "b.yml",
      });
    expect(judged(1).failed).toBe(1);
    expect(judged(1).lines.join("\n")).toMatch(/disagrees with the table/);
    expect(judged(null).failed).toBe(0);
  });
});
