import { execFile } from "node:child_process";
import { symlink } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { OPENING_BASELINE } from "./opening-baseline.ts";
import { repoRoot } from "./paths.ts";
import { makeTempDir } from "./temp-dir.ts";

const run = promisify(execFile);

/**
 * Main's code before issue 15 (OPENING_BASELINE.commit), written out of this repository's git
 * history into a temp dir so the `initialize` / `server/discover` rows can load it beside
 * today's code, on the same machine in the same rounds, instead of comparing with a figure
 * measured on another machine on another day. Its `package.json` (ES modules), `bin`, `src` and
 * `skills` only: it runs on this checkout's `node_modules`, so both run on the same libraries and
 * the ratio compares code alone (since then only patch releases and zod's pin, adr/0062, moved).
 * Answers where its `bin/atrium.js` is, or why it could not be written (no git, a shallow clone).
 */
export async function checkOutBeforeIssue15(): Promise<{ bin: string } | { error: string }> {
  const commit = OPENING_BASELINE.commit;
  try {
    const dir = await makeTempDir("atrium-bench-before-issue-15");
    const archive = join(dir.path, "tree.tar");
    await run("git", [
      "-C",
      repoRoot,
      "archive",
      "--output",
      archive,
      commit,
      "package.json",
      "bin",
      "src",
      "skills",
    ]);
    await run("tar", ["-x", "-f", archive, "-C", dir.path]);
    await symlink(join(repoRoot, "node_modules"), join(dir.path, "node_modules"), "dir");
    return { bin: join(dir.path, "bin", "atrium.js") };
  } catch (error) {
    const reason = error instanceof Error ? error.message.split("\n")[0] : String(error);
    return { error: `main at ${commit} could not be written out of git history: ${reason}` };
  }
}
