// Everything the bench creates (child processes, temp dirs) is registered here, so one place can
// tear it all down whether the run finishes, throws, or is interrupted.

export interface Disposable {
  /** Graceful, awaited teardown for the normal and error paths. */
  dispose(): Promise<void>;
  /** Last-resort synchronous teardown for process exit, where nothing async can run. */
  disposeNow(): void;
}

const live = new Set<Disposable>();

export function track<T extends Disposable>(resource: T): T {
  live.add(resource);
  return resource;
}

export async function release(resource: Disposable): Promise<void> {
  live.delete(resource);
  await resource.dispose();
}

// Reverse creation order: a server is stopped before the temp dir it reads from is removed.
export async function releaseAll(): Promise<void> {
  for (const resource of [...live].reverse()) {
    await release(resource).catch(() => resource.disposeNow());
  }
}

function releaseAllNow(): void {
  for (const resource of [...live].reverse()) {
    live.delete(resource);
    try {
      resource.disposeNow();
    } catch {
      // Best effort: keep going so one failure does not leak the rest.
    }
  }
}

// SIGINT/SIGTERM get the graceful path; 'exit' catches anything that slipped past (uncaught errors).
export function installSignalCleanup(onSignal: (signal: NodeJS.Signals) => void): void {
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      onSignal(signal);
      void releaseAll().finally(() => process.exit(signal === "SIGINT" ? 130 : 143));
    });
  }
  process.once("exit", releaseAllNow);
}
