import { lstat, mkdir, readdir, rmdir, stat } from "node:fs/promises";
import { dirname } from "node:path";
import { syncDir } from "./atomic.ts";
import { FlushedFolders } from "./flushed-folders.ts";

/** Every folder Atrium makes under the root is its alone, like `_instance/` (issue 10, Security 10). */
export const FOLDER_MODE = 0o700;

// The folders whose entry this process has flushed in their parent. One found already there may
// be unflushed: made by a process that crashed before its flush, by a call whose flush failed and
// whose removal failed too, or by a concurrent call still flushing. The kernel shows it, yet a
// power loss takes it with all written into it since (ADR 0149). So each is flushed once per
// process before a write relies on it, and never again while remembered: a write path pays a set
// lookup, not a directory fsync (1.5–7 ms here) per write.
const flushedHere = new FlushedFolders(65_536);

/**
 * Creates one folder whose parent must already exist. Never recursive: a writer inside a
 * workspace must fail (ENOENT) when the workspace is gone, not bring its folder back. Once this
 * returns, the folder's entry, made now or found, is flushed in its parent, so what is later
 * renamed into it survives a power loss; a folder made whose flush fails is removed (ADR 0149).
 */
export async function makeFolderIfMissing(path: string): Promise<void> {
  const parent = dirname(path);
  // A folder is made only inside one whose own entry is flushed, so one a crash left unflushed
  // never holds another made after it, and a found folder needs only its own entry flushed.
  // A folder this process has flushed needs no look: its parent was flushed before it was made.
  if (!flushedHere.has(parent) && !flushedHere.has(path) && !(await exists(path)))
    await flushEntryOnce(parent);
  try {
    await mkdir(path, { mode: FOLDER_MODE });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    await flushEntryOnce(path);
    return;
  }
  try {
    // The parent may have been checked before a folder found there went (a concurrent removal).
    await flushEntryOnce(parent);
    await syncDir(parent);
  } catch (error) {
    // Nothing is left made but unflushed. rmdir removes it only while empty: a concurrent call
    // that found it flushed it itself, and what it has written there stays.
    await rmdir(path).catch(() => undefined);
    throw error;
  }
  flushedHere.remember(path);
}

/**
 * Creates `path` and every missing folder above it, each as `makeFolderIfMissing` does, so a
 * record written into it survives a power loss with the folders that hold it. Only for folders
 * outside any workspace (the instance's `_instance/…`, a person's own): inside one, a writer
 * uses makeFolderIfMissing so that it fails when the workspace is gone.
 */
export async function makeFolderPathIfMissing(path: string): Promise<void> {
  try {
    await makeFolderIfMissing(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    await makeFolderPathIfMissing(dirname(path));
    await makeFolderIfMissing(path);
  }
}

/**
 * Makes the data root as makeFolderPathIfMissing does, or takes one found already there as
 * flushed: its entry is the operator's, in a folder Atrium may not open (0711, another owner) or
 * on a read-only filesystem (a container's root with the data on a volume), and a boot must not
 * fail on flushing it. Atrium flushes nothing above its root that it did not make (ADR 0149).
 */
export async function makeRootIfMissing(root: string): Promise<void> {
  if (!(await isFolder(root))) await makeFolderPathIfMissing(root);
  flushedHere.pinRoot(root);
}

/** Flushes `folder`'s entry in its parent unless this process has; ENOENT when it is missing. */
async function flushEntryOnce(folder: string): Promise<void> {
  if (flushedHere.has(folder)) return;
  await stat(folder);
  await syncDir(dirname(folder));
  flushedHere.remember(folder);
}

/** Whether `path` is a folder; false when nothing is there. */
export async function isFolder(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
}

/** Whether anything is at `path` (a symbolic link itself counts); false when nothing is there. */
export async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
}

/** The names in folder `path`; none when it does not exist (nothing was ever written there). */
export async function namesIn(path: string): Promise<string[]> {
  try {
    return await readdir(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
}
