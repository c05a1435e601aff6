import { lstat, mkdir, readdir, stat } from "node:fs/promises";
import { dirname } from "node:path";
import { syncDir } from "./atomic.ts";

/** Every folder Atrium makes under the root is its alone, like `_instance/` (issue 10, Security 10). */
export const FOLDER_MODE = 0o700;

/**
 * Creates one folder whose parent must already exist. Never recursive: a writer inside a
 * workspace must fail (ENOENT) when the workspace is gone, not bring its folder back. A new
 * folder's entry is flushed in its parent, so what is later renamed into it survives a power loss.
 */
export async function makeFolderIfMissing(path: string): Promise<void> {
  try {
    await mkdir(path, { mode: FOLDER_MODE });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    return;
  }
  await syncDir(dirname(path));
}

/**
 * Creates `path` and every missing folder above it, each new one flushed in its parent, so a
 * record written into it survives a power loss with the folders that hold it. Only for folders
 * outside any workspace (the instance's `_instance/…`, a person's own): inside one, a writer
 * uses makeFolderIfMissing so that it fails when the workspace is gone.
 */
export async function makeFolderPathIfMissing(path: string): Promise<void> {
  try {
    await mkdir(path, { mode: FOLDER_MODE });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EEXIST") return;
    if (code !== "ENOENT") throw error;
    await makeFolderPathIfMissing(dirname(path));
    await makeFolderIfMissing(path);
    return;
  }
  await syncDir(dirname(path));
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
