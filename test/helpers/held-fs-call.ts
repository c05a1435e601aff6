import { type FsReplacement, withFsHook } from "./fs-hook.ts";

type Hookable = "open" | "stat" | "lstat" | "mkdir" | "readdir";

/** The one fs call `holdingFsCall` holds: reached once it is made, made for real at `release`. */
export interface HeldFsCall {
  reached: Promise<void>;
  release(): void;
}

/**
 * Runs `work` while the first call of node:fs/promises' `name` whose path `matches` waits until
 * `release` (every other call goes through): a write held mid-call at a step before its commit, as a
 * slow disk would hold it, while the test changes who may make it. Released however `work` ends.
 */
export async function holdingFsCall<T>(
  name: Hookable,
  matches: (path: string) => boolean,
  work: (held: HeldFsCall) => Promise<T>,
): Promise<T> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let reach!: () => void;
  const reached = new Promise<void>((resolve) => (reach = resolve));
  let taken = false;
  const hook = (real: (...args: unknown[]) => Promise<unknown>) =>
    (async (...args: unknown[]) => {
      if (!taken && matches(String(args[0]))) {
        taken = true;
        reach();
        await released;
      }
      return real(...args);
    }) as FsReplacement<typeof name>;
  try {
    return await withFsHook(name, hook as never, () => work({ reached, release }));
  } finally {
    release();
  }
}
