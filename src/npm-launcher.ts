import { readFileSync, readlinkSync, realpathSync } from "node:fs";

/**
 * The npm process that started this server, and how to tell it is gone (ADR 0023).
 *
 * `npm start` runs `exec node …`, so npm is the parent. `npx atrium serve` runs
 * `sh -c 'atrium serve …'`, so the parent is that shell and npm is the grandparent: npm killed
 * outright (SIGKILL, the OOM killer) leaves the shell alive, the server's own parent never changes,
 * and watching the parent alone left it serving the root as an orphan
 * (test/integration/shutdown.test.ts "`npx atrium serve`"). So when the parent is not npm's node
 * and its own parent is, the shell's link to npm is watched too.
 *
 * Processes are told apart by their executable (`/proc/<pid>/exe`) against the node npm runs
 * under (`npm_node_execpath`, which npm sets for what it starts). Without `/proc` (not Linux) or
 * without leave to read it, only the parent is watched, as before.
 */
export interface NpmLauncher {
  /** True once the npm process (or the shell between it and the server) is gone. */
  gone(): boolean;
}

export function npmLauncher(env: NodeJS.ProcessEnv): NpmLauncher {
  const parent = process.ppid;
  const npmNode = realPath(env.npm_node_execpath);
  const shellParent = npmNode === undefined ? undefined : npmBehindShell(parent, npmNode);
  return {
    gone: () => process.ppid !== parent || (shellParent !== undefined && shellLeftNpm(parent, shellParent)),
  };
}

/**
 * Whether the shell between npm and the server has another parent now. A read of its parent that
 * fails says nothing (out of file descriptors under a flood of connections, EMFILE): taken for
 * npm's death, it stopped a healthy server; the next poll asks again.
 */
function shellLeftNpm(shell: number, npm: number): boolean {
  const now = parentOf(shell);
  return now !== undefined && now !== npm;
}

/** npm's pid when `parent` is a process other than npm's node whose own parent is npm's node. */
function npmBehindShell(parent: number, npmNode: string): number | undefined {
  const parentExecutable = executableOf(parent);
  if (parentExecutable === undefined || parentExecutable === npmNode) return undefined;
  const grandparent = parentOf(parent);
  if (grandparent === undefined || grandparent <= 1) return undefined;
  return executableOf(grandparent) === npmNode ? grandparent : undefined;
}

/**
 * The parent pid in `/proc/<pid>/stat`, whose second field (the command name, in parentheses)
 * may itself hold spaces and parentheses: the fields after it start past the last `)`.
 */
export function parentInStat(stat: string): number | undefined {
  const end = stat.lastIndexOf(")");
  if (end === -1) return undefined;
  const ppid = Number(stat.slice(end + 2).split(" ")[1]);
  return Number.isInteger(ppid) && ppid >= 0 ? ppid : undefined;
}

function parentOf(pid: number): number | undefined {
  try {
    return parentInStat(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return undefined;
  }
}

function executableOf(pid: number): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/exe`);
  } catch {
    return undefined;
  }
}

function realPath(path: string | undefined): string | undefined {
  if (path === undefined || path === "") return undefined;
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}
