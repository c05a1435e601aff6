import { mkdir } from "node:fs/promises";
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
