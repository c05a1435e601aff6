// Prints the suite's closing line, `tests: N passed, M failed`, from vitest's JSON report,
// so CI and people read one count for the whole of `npm test`.
import { readFileSync } from "node:fs";

let report;
try {
  report = JSON.parse(readFileSync("test-results/vitest.json", "utf8"));
} catch (error) {
  // `npm test` removes the report first: none means vitest stopped before it could write one.
  process.stdout.write(`tests: no report (${error.code ?? error.message}): vitest did not finish\n`);
  process.exit(1);
}
const skipped = report.numPendingTests + report.numTodoTests;
const tail = skipped > 0 ? `, ${skipped} skipped` : "";
process.stdout.write(`tests: ${report.numPassedTests} passed, ${report.numFailedTests} failed${tail}\n`);
if (report.numTotalTests === 0) {
  process.stderr.write("No test ran.\n");
  process.exit(1);
}
