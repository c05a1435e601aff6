import { createRequire, syncBuiltinESMExports } from "node:module";

type FsPromises = typeof import("node:fs/promises");
type Functions = {
  [K in keyof FsPromises]: FsPromises[K] extends (...args: never[]) => unknown ? K : never;
}[keyof FsPromises];
/**
 * What stands in for `K` while the work runs, typed as its last overload: the arguments pass
 * through to the real one, whichever overload its caller meant.
 */
export type FsReplacement<K extends Functions> = (
  ...args: Parameters<FsPromises[K]>
) => ReturnType<FsPromises[K]>;

// node:fs/promises as a mutable object: its ESM bindings, which the code under test imports,
// follow a change to it once syncBuiltinESMExports() is called (a vi.mock of a module is not seen
// by a worker that imported it for an earlier file).
const fsPromises = createRequire(import.meta.url)("node:fs/promises") as Record<Functions, unknown>;

/**
 * Runs `work` with node:fs/promises' `name` replaced by what `hook` makes of the real one (a swap
 * or a count at an exact step), and puts the real one back however `work` ends.
 */
export async function withFsHook<K extends Functions, T>(
  name: K,
  hook: (real: FsPromises[K]) => FsReplacement<K>,
  work: () => Promise<T>,
): Promise<T> {
  const real = fsPromises[name] as FsPromises[K];
  fsPromises[name] = hook(real);
  syncBuiltinESMExports();
  try {
    return await work();
  } finally {
    fsPromises[name] = real;
    syncBuiltinESMExports();
  }
}
