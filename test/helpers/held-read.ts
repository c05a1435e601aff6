import { withFsHook } from "./fs-hook.ts";

/** The one read `holdingReadAnswer` holds: reached once it has read the file, answered at `release`. */
export interface HeldRead {
  reached: Promise<void>;
  release(): void;
}

/**
 * Runs `work` while the first readFile of `path` reads the file for real and then waits until
 * `release` before it answers (a busy thread pool): what it answers is the file as it was before
 * anything `work` writes meanwhile. Every other call goes through; released however `work` ends.
 */
export async function holdingReadAnswer<T>(path: string, work: (held: HeldRead) => Promise<T>): Promise<T> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let reach!: () => void;
  const reached = new Promise<void>((resolve) => (reach = resolve));
  let taken = false;
  try {
    return await withFsHook(
      "readFile",
      (real) =>
        (async (...args: Parameters<typeof real>) => {
          const text = await real(...args);
          if (!taken && String(args[0]) === path) {
            taken = true;
            reach();
            await released;
          }
          return text;
        }) as typeof real,
      () => work({ reached, release }),
    );
  } finally {
    release();
  }
}
