import { randomBytes } from "node:crypto";
import { open, readFile, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

/** The name a writer gives its temp file; boot and listings skip names with this prefix. */
export const TEMP_PREFIX = ".tmp-";

export function tempPathBeside(path: string): string {
  return join(dirname(path), `${TEMP_PREFIX}${basename(path)}-${randomBytes(6).toString("hex")}`);
}

/**
 * Flushes a folder's entries (a rename or create inside it) to the disk. Without it a rename
 * survives `kill -9` but may be undone by a power loss (adr/0024).
 */
export async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Creates `path` (0600; it must not exist), writes `data` and fsyncs it before returning. */
export async function writeNewFileSynced(path: string, data: string | Uint8Array): Promise<void> {
  const handle = await open(path, "wx", 0o600);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Writes to a temp file beside the target, fsyncs it, renames it over the target and fsyncs
 * the folder: a reader sees the old bytes or the new ones, never half of either, and once
 * this returns the new bytes survive a power loss.
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array): Promise<void> {
  const temp = tempPathBeside(path);
  try {
    await writeNewFileSynced(temp, data);
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
  await syncDir(dirname(path));
}

export async function writeJsonAtomic(path: string, value: unknown): Promise<void> {
  await writeFileAtomic(path, `${JSON.stringify(value, null, 2)}\n`);
}

/** Reads a JSON file; `undefined` when it does not exist. A parse failure is thrown. */
export async function readJsonIfExists(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  return JSON.parse(text);
}
