// Makes `npm start` and `npm test` work on a fresh clone: installs the locked dependencies
// when node_modules is missing or older than package-lock.json, and does nothing otherwise.
import { spawnSync } from "node:child_process";
import { statSync } from "node:fs";

function mtime(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

const lock = mtime("package-lock.json");
const installed = mtime("node_modules/.package-lock.json");
if (installed === undefined || (lock !== undefined && installed < lock)) {
  process.stderr.write("Installing dependencies with npm ci…\n");
  const result = spawnSync("npm", ["ci", "--no-audit", "--no-fund"], { stdio: "inherit" });
  process.exit(result.status ?? 1);
}
