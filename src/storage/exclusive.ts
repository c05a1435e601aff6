import { randomBytes } from "node:crypto";
import { link, lstat, mkdir, rename, rm, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { syncDir, TEMP_PREFIX, tempPathBeside, writeNewFileSynced } from "./atomic.ts";
import { FOLDER_MODE, makeFolderPathIfMissing } from "./folders.ts";

// Creations that must happen once even when several processes race for them (a first key, a
// generated secret, the instance lock). The filesystem decides, not an in-process lock: a
// second replica on a shared root must agree with the first (DESIGN.md "One root, one process").

/**
 * Creates `path` holding `data` only if nothing is there, and says whether this call made it.
 * The bytes go to a temp file (0600, fsynced) that is then `link()`ed to `path`: link fails
 * with EEXIST when `path` exists, so of several racing writers exactly one wins, and a reader
 * never sees the file half-written (an `open(path, "wx")` would be visible empty). A link whose
 * folder flush fails is unlinked again, so an error means "not created" (adr/0116). `beforeLink`
 * may refuse the create by throwing, just before the link that makes it seen: the temp file is
 * removed and its error thrown.
 */
export async function createFileExclusive(
  path: string,
  data: string,
  beforeLink?: () => void,
): Promise<boolean> {
  const temp = tempPathBeside(path);
  try {
    await writeNewFileSynced(temp, data);
    beforeLink?.();
    await link(temp, path);
    try {
      await syncDir(dirname(path));
    } catch (error) {
      // Unflushed, the file may be lost to a power loss after its caller was told it exists;
      // kept, a caller told it was not made finds it (a conversation listed, a retry making a
      // second one). Unlinked and that flushed, never the flush retried (adr/0112); if that fails
      // too, the disk refuses every change and the error is answered all the same
      // (test/unit/platform/conversations/flush-failure.test.ts "a create whose folder flush fails").
      // Only this call's own file is unlinked: a writer that replaced it meanwhile was told its
      // record is stored (ADR 0166, amended 2026-12-07, "an undo removes only its own write").
      await unlinkIfSame(path, temp)
        .then(() => syncDir(dirname(path)))
        .catch(() => undefined);
      throw error;
    }
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  } finally {
    await rm(temp, { force: true });
  }
}

/** Unlinks `path` while it is still the file `ours` names (one inode, linked under both names). */
async function unlinkIfSame(path: string, ours: string): Promise<void> {
  const [mine, there] = await Promise.all([lstat(ours), lstat(path)]);
  if (mine.dev === there.dev && mine.ino === there.ino) await unlink(path);
}

/**
 * Creates the folder `path` holding `files` (name → content, each 0600) only if it is missing
 * or empty, and says whether this call made it. The folder is assembled beside `path` and
 * renamed there in one step; rename(2) refuses a target that holds anything, so of several
 * racing creators exactly one wins and a reader sees all the files or none. The parent is
 * created (0700) when missing. Once this returns, the folder survives a power loss with every
 * file in it: each file, the staged folder's entries and the rename are flushed in turn.
 */
export async function createFolderExclusive(path: string, files: Record<string, string>): Promise<boolean> {
  await makeFolderPathIfMissing(dirname(path));
  const staging = join(dirname(path), `${TEMP_PREFIX}${basename(path)}-${randomBytes(6).toString("hex")}`);
  await mkdir(staging, { mode: FOLDER_MODE });
  try {
    for (const [name, data] of Object.entries(files)) {
      if (name !== basename(name) || name.startsWith(".")) throw new Error(`Not a plain file name: ${name}`);
      await writeNewFileSynced(join(staging, name), data);
    }
    // The files' names are entries of the staged folder: unflushed, the folder could be found in
    // place after a power loss with its files missing.
    await syncDir(staging);
    await rename(staging, path);
    await syncDir(dirname(path));
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOTEMPTY" || code === "EEXIST") return false;
    throw error;
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}
