import { execFile } from "node:child_process";
import { chmod } from "node:fs/promises";
import { promisify } from "node:util";

const run = promisify(execFile);

/**
 * Makes `dir` take no new entry, as a read-only filesystem would, whoever runs the test: mode
 * 0500, and for root, whom modes do not stop, the immutable attribute too (`chattr +i`: ext4,
 * xfs, btrfs, tmpfs). Its files still read. Answers the undo, which must run before the folder
 * is removed (an immutable folder's entries cannot be); running it twice is harmless.
 */
export async function refuseNewEntries(dir: string): Promise<() => Promise<void>> {
  const asRoot = process.getuid?.() === 0;
  await chmod(dir, 0o500);
  if (asRoot) await run("chattr", ["+i", dir]);
  return async () => {
    if (asRoot) await run("chattr", ["-i", dir]);
    await chmod(dir, 0o700);
  };
}
