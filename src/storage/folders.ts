import { mkdir } from "node:fs/promises";

/**
 * Creates one folder whose parent must already exist. Never recursive: a writer inside a
 * workspace must fail (ENOENT) when the workspace is gone, not bring its folder back.
 */
export async function makeFolderIfMissing(path: string): Promise<void> {
  try {
    await mkdir(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
}
