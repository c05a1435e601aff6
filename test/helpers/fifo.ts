import { execFileSync } from "node:child_process";
import { closeSync, constants, openSync } from "node:fs";

/** Makes a FIFO at `path`, as an operator's `mkfifo` would leave one. */
export function makeFifo(path: string): void {
  execFileSync("mkfifo", [path]);
}

/**
 * Opens the FIFO for writing and closes it: a reader the code under test failed not to start is
 * let go, so the test process is not held by a thread of the pool.
 */
export function releaseFifo(path: string): void {
  try {
    closeSync(openSync(path, constants.O_WRONLY | constants.O_NONBLOCK));
  } catch {
    // No reader waiting: nothing to let go.
  }
}

/** `work`'s value, or `hung` when it has not settled within `ms` (a read of a FIFO blocked it). */
export function unlessHung<T>(work: Promise<T>, ms = 3000): Promise<T | "hung"> {
  return Promise.race([
    work,
    new Promise<"hung">((resolve) => setTimeout(() => resolve("hung"), ms).unref()),
  ]);
}
