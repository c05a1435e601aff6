// The conformance baseline (expected-failures file) and the verdict per scenario, the way the
// suite itself judges them (@modelcontextprotocol/conformance `--expected-failures`), so the
// harness can print one table per suite with each entry's reason and catch a disagreement
// with the suite's own exit code. Pure functions: test/unit/conformance-baseline.test.ts.
//
// File shape: a `server:` list (a `client:` list for the client suites); each entry is `<scenario>` (the whole scenario may fail) or,
// where the suite supports it (0.2.x), `<scenario>:<check-id>` (only that check may fail).
// Each entry's reason is the comment on its line or the comment line(s) just above it, and an
// entry without one is refused: a baseline entry nobody can justify is how a baseline rots.

export class BaselineError extends Error {}

/**
 * @param {string} text the file's contents
 * @param {{ perCheck: boolean, file: string, section?: "server" | "client" }} options the
 *   list read is `section:` (default `server`); the other is ignored, as the suite ignores it
 * @returns {Map<string, string>} entry → reason, in file order
 */
export function parseBaseline(text, { perCheck, file, section = "server" }) {
  const entries = new Map();
  const heading = new RegExp(`^${section}:\\s*(#.*)?$`);
  let inSection = false;
  let comment = [];
  const lines = text.split(/\r?\n/);
  for (const [index, raw] of lines.entries()) {
    const where = `${file}:${index + 1}`;
    if (/^\S/.test(raw) && !raw.startsWith("#")) {
      inSection = heading.test(raw);
      comment = [];
      continue;
    }
    if (!inSection) continue;
    if (!raw.trim()) {
      comment = [];
      continue;
    }
    const c = raw.match(/^\s*#\s?(.*)$/);
    if (c) {
      comment.push(c[1].trim());
      continue;
    }
    const item = raw.match(/^\s+-\s+["']?([^"'#\s]+)["']?\s*(?:#\s?(.*))?$/);
    if (!item) throw new BaselineError(`${where}: not a baseline entry: ${raw.trim()}`);
    const entry = item[1];
    const reason = (item[2] ?? comment.join(" ")).trim();
    comment = [];
    const colon = entry.indexOf(":");
    if (colon !== -1) {
      if (!perCheck)
        throw new BaselineError(
          `${where}: ${entry} names one check, but this suite version baselines whole scenarios only`,
        );
      if (colon === 0 || colon === entry.length - 1)
        throw new BaselineError(`${where}: ${entry} is not <scenario>:<check-id> (both sides are required)`);
    }
    if (!reason)
      throw new BaselineError(`${where}: ${entry} has no reason (write it as a comment above the entry)`);
    if (entries.has(entry)) throw new BaselineError(`${where}: ${entry} is listed twice`);
    entries.set(entry, reason);
  }
  for (const entry of entries.keys()) {
    const scenario = scenarioOf(entry);
    if (entry !== scenario && entries.has(scenario))
      throw new BaselineError(
        `${file}: ${scenario} is baselined whole, so ${entry} is redundant; remove one of them`,
      );
  }
  return entries;
}

export function scenarioOf(entry) {
  const colon = entry.indexOf(":");
  return colon === -1 ? entry : entry.slice(0, colon);
}

const failing = (check) => check.status === "FAILURE" || check.status === "WARNING";
const SEVERITY = { FAILURE: 3, WARNING: 2, SUCCESS: 1 };

// Repeated check ids collapse to one verdict, most severe first (as the suite does).
function collapse(checks) {
  const chosen = new Map();
  checks.forEach((check, i) => {
    if (check.status === "INFO") return;
    const prev = chosen.get(check.id);
    if (prev === undefined || (SEVERITY[check.status] ?? 0) >= (SEVERITY[checks[prev].status] ?? 0))
      chosen.set(check.id, i);
  });
  return checks.filter((check, i) => check.status !== "INFO" && chosen.get(check.id) === i);
}

/**
 * One scenario's verdict against the baseline.
 * @param {{ name: string, checks?: object[] }} result `checks` absent: the scenario did not finish
 * @param {Map<string, string>} baseline
 * @returns {{ verdict: "pass"|"expected"|"stale"|"fail", problems: object[], expected: string[], stale: string[] }}
 */
export function judgeScenario(result, baseline) {
  const checks = result.checks ?? [
    {
      id: result.name,
      status: "FAILURE",
      errorMessage: "no checks.json (the scenario did not run to completion)",
    },
  ];
  if (baseline.has(result.name)) {
    const problems = checks.filter(failing);
    return problems.length
      ? { verdict: "expected", problems, expected: [result.name], stale: [] }
      : { verdict: "stale", problems: [], expected: [], stale: [result.name] };
  }
  const listed = new Set(
    [...baseline.keys()].filter((e) => e !== result.name && scenarioOf(e) === result.name),
  );
  if (!listed.size) {
    const problems = checks.filter(failing);
    return { verdict: problems.length ? "fail" : "pass", problems, expected: [], stale: [] };
  }
  const collapsed = collapse(checks);
  const problems = [];
  const expected = [];
  for (const check of collapsed.filter(failing)) {
    const entry = `${result.name}:${check.id}`;
    if (listed.has(entry)) expected.push(entry);
    else problems.push(check);
  }
  // A listed check that is absent or skipped is tolerated: a scenario that stops at a failed
  // prerequisite never reaches its later checks, and the prerequisite reports its own failure.
  const stale = [...listed].filter(
    (entry) => collapsed.find((c) => `${result.name}:${c.id}` === entry)?.status === "SUCCESS",
  );
  const verdict = problems.length ? "fail" : stale.length ? "stale" : expected.length ? "expected" : "pass";
  return { verdict, problems, expected, stale };
}
