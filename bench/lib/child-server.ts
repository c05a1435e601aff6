import { type ChildProcess, spawn } from "node:child_process";
import { type Disposable, track } from "./cleanup.ts";
import { OutputTail } from "./output-tail.ts";
import { processCpuUs } from "./process-cpu.ts";

export interface ChildServer extends Disposable {
  name: string;
  output: OutputTail;
  /** Set once the process has exited, so waiters can fail fast instead of timing out. */
  exited: () => string | undefined;
  /** CPU µs the process has used so far (bench/lib/process-cpu.ts), where the OS reports it. */
  cpuUs: () => number | undefined;
}

export interface SpawnServerOptions {
  name: string;
  args: string[];
  cwd: string;
  /** Our own bench servers watch stdin to die with the parent; other programs get no stdin. */
  keepStdinOpen: boolean;
}

const GRACE_MS = 3_000;

// Each server gets its own process group (detached) so stopping it also stops anything it spawned.
export function spawnServer(options: SpawnServerOptions): ChildServer {
  const child = spawn(process.execPath, options.args, {
    cwd: options.cwd,
    detached: true,
    stdio: [options.keepStdinOpen ? "pipe" : "ignore", "pipe", "pipe"],
    env: process.env,
  });
  const output = new OutputTail();
  output.follow(child.stdout);
  output.follow(child.stderr);

  let exitReason: string | undefined;
  child.once("exit", (code, signal) => {
    exitReason = signal ? `killed by ${signal}` : `exited with code ${code}`;
  });
  child.once("error", (error) => {
    exitReason = `failed to start: ${error.message}`;
  });

  return track({
    name: options.name,
    output,
    exited: () => exitReason,
    cpuUs: () => (child.pid === undefined ? undefined : processCpuUs(child.pid)),
    dispose: () => stop(child, () => exitReason !== undefined),
    disposeNow: () => signalGroup(child, "SIGKILL"),
  });
}

async function stop(child: ChildProcess, hasExited: () => boolean): Promise<void> {
  if (hasExited()) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  signalGroup(child, "SIGTERM");
  const timer = setTimeout(() => signalGroup(child, "SIGKILL"), GRACE_MS);
  await exited;
  clearTimeout(timer);
  // Grandchildren may outlive a leader that exited on SIGTERM; the group id stays valid while they do.
  signalGroup(child, "SIGKILL");
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // ESRCH: the whole group is already gone.
  }
}
