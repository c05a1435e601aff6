import { type ChildProcess, spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { CliOutput } from "../../src/cli.ts";

/** `bin/atrium.js`, run by the same node as the tests. */
export const ATRIUM_BIN = fileURLToPath(new URL("../../bin/atrium.js", import.meta.url));

export interface CliExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliProcess {
  pid: number;
  /** Sends a signal without waiting. */
  kill(signal: NodeJS.Signals): void;
  /** What the process has written so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves once stdout or stderr matches, with the match; rejects if the process exits first. */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  exited: Promise<CliExit>;
  /** Sends SIGTERM (the CLI's own shutdown path) and waits; SIGKILL if it does not go. */
  stop(): Promise<CliExit>;
}

const STOP_GRACE_MS = 5_000;

/** Runs `node bin/atrium.js <args>` in `cwd` with its output captured. */
export function spawnAtriumCli(args: string[], cwd: string): CliProcess {
  return spawnCaptured(process.execPath, [ATRIUM_BIN, ...args], cwd);
}

/** Runs any command (e.g. `npm start`) in `cwd` with its output captured. */
export function spawnCaptured(
  command: string,
  args: string[],
  cwd: string,
  env: Record<string, string> = {},
): CliProcess {
  const child: ChildProcess = spawn(command, args, {
    cwd,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, NO_COLOR: "1", ...env },
  });
  let stdout = "";
  let stderr = "";
  const listeners = new Set<() => void>();
  const changed = () => {
    for (const listener of listeners) listener();
  };
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString("utf8");
    changed();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
    changed();
  });
  let done = false;
  const exited = new Promise<CliExit>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code, signal) => {
      done = true;
      changed();
      resolve({ code, signal, stdout, stderr });
    });
  });

  return {
    pid: child.pid as number,
    kill: (signal) => void child.kill(signal),
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    waitForOutput(pattern, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(
            new Error(
              `no output matching ${pattern} within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`,
            ),
          );
        }, timeoutMs);
        function check(): void {
          const match = stdout.match(pattern) ?? stderr.match(pattern);
          if (!match && !done) return;
          clearTimeout(timer);
          listeners.delete(check);
          if (match) resolve(match);
          else
            reject(
              new Error(`atrium exited before printing ${pattern}\nstdout: ${stdout}\nstderr: ${stderr}`),
            );
        }
        listeners.add(check);
        check();
      });
    },
    async stop() {
      if (!done) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS);
        try {
          return await exited;
        } finally {
          clearTimeout(timer);
        }
      }
      return exited;
    },
  };
}

/** Runs the CLI to completion (for commands that should exit on their own) and returns how it ended. */
export async function runAtriumCli(args: string[], cwd: string, timeoutMs = 15_000): Promise<CliExit> {
  const cli = spawnAtriumCli(args, cwd);
  const timer = setTimeout(() => void cli.stop(), timeoutMs);
  try {
    return await cli.exited;
  } finally {
    clearTimeout(timer);
  }
}

/** An instance.json for the CLI in `dir` (`dev`, root `./data`, port 0, JSON logs at info). */
export async function writeCliInstance(
  dir: string,
  overrides: Record<string, unknown> = {},
): Promise<string> {
  const path = join(dir, "instance.json");
  const instance = {
    auth: { adapter: "dev" },
    storage: { root: "./data" },
    http: { host: "127.0.0.1", port: 0, publicUrl: "http://127.0.0.1:8787" },
    log: { level: "info" },
    ...overrides,
  };
  await writeFile(path, JSON.stringify(instance, null, 2));
  return path;
}

/** The JSON log lines a process printed whose `msg` matches. */
export function logEntries(output: string, msg: RegExp): Array<Record<string, unknown>> {
  return output
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((entry) => msg.test(String(entry.msg)));
}

/**
 * Runs the CLI's `main` in this process, with what it writes to stdout and stderr captured, for
 * the many usage and help cases whose subject is the argument parsing rather than the process:
 * each spawn of bin/atrium.js pays a cold tsx start and an import of every source (seconds on a
 * loaded machine). bin/atrium.js only hands `main`'s answer to process.exit; tests that spawn it
 * cover that boundary once per exit code. Only for commands that return without serving.
 */
export async function runAtriumMain(args: string[]): Promise<CliExit> {
  const { main } = await import("../../src/cli.ts");
  const captured = capturedOutput();
  const code = await main(args, captured);
  return { code, signal: null, stdout: captured.stdout, stderr: captured.stderr };
}

/** Where a command run in this process writes (src/cli.ts CliOutput), kept for the test to read. */
export function capturedOutput(): CliOutput & { stdout: string; stderr: string } {
  const captured = {
    stdout: "",
    stderr: "",
    out(text: string) {
      captured.stdout += text;
    },
    err(text: string) {
      captured.stderr += text;
    },
  };
  return captured;
}
