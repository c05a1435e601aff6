// Types for conformance-run.mjs (plain Node so the harness runs without tsx), for the tests:
// only judgeSuite, the part with logic worth pinning.

export interface SuiteRun {
  /** The suite's exit code; null when there is no single one to compare the table with. */
  code: number | string | null;
  timedOut: boolean;
  timeoutMs?: number;
  error: string | null;
  output: string;
  resultsDir: string;
}

export function judgeSuite(options: {
  scored: string[];
  notScored: string[];
  baseline: Map<string, string>;
  run: SuiteRun;
  /** `server`/`authorization-server` for `<prefix>-<scenario>-<time>/`; null for client runs. */
  resultPrefix: string | null;
  baselineFile: string | null;
}): { lines: string[]; passed: number; expected: number; failed: number; notScoredPassed: number };
