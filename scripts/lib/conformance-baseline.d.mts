// Types for conformance-baseline.mjs (plain Node so the harness runs without tsx), for the tests.

export class BaselineError extends Error {}

export interface Check {
  id: string;
  status: "SUCCESS" | "FAILURE" | "WARNING" | "INFO" | "SKIPPED";
  errorMessage?: string;
  description?: string;
}

export function parseBaseline(
  text: string,
  options: { perCheck: boolean; file: string; section?: "server" | "client" },
): Map<string, string>;

export function scenarioOf(entry: string): string;

export function judgeScenario(
  result: { name: string; checks?: Check[] },
  baseline: Map<string, string>,
): {
  verdict: "pass" | "expected" | "stale" | "fail";
  problems: Check[];
  expected: string[];
  stale: string[];
};
