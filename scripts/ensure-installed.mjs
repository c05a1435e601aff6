// Makes `npm start` and `npm test` work on a fresh clone: installs the locked dependencies
// when node_modules was not installed from this very package-lock.json, and does nothing
// otherwise. It compares the lock's content, not its mtime: a checkout or a `git worktree add`
// touches the file without changing it, and an mtime check then reinstalled (through a
// symlinked node_modules it wiped a shared install mid-run).
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";

const STAMP = "node_modules/.atrium-installed-lock";

function read(path) {
  try {
    return readFileSync(path);
  } catch {
    return undefined;
  }
}

const lock = read("package-lock.json");
const digest = lock === undefined ? "" : createHash("sha256").update(lock).digest("hex");
if (read(STAMP)?.toString() !== digest) {
  process.stderr.write("Installing dependencies with npm ci…\n");
  const result = spawnSync("npm", ["ci", "--no-audit", "--no-fund"], { stdio: "inherit" });
  if (result.status === 0) writeFileSync(STAMP, digest);
  process.exit(result.status ?? 1);
}
