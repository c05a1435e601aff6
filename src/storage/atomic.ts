import { randomBytes } from "node:crypto";
import { open, readFile, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { BootError } from "../errors.ts";
import { describeJsonFault } from "./json-where.ts";

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
 * A write whose rename (or unlink) landed and whose folder's flush then failed: the file holds the
 * new bytes (or is gone) for every reader from now on, the old ones gone, and only a power loss may
 * still undo it. A store that keeps what it writes holds the change as landed (ADR 0166). Its
 * `code` is the flush's (EIO, ENOSPC…), so the edge answers it as it answers that error.
 */
/** WrittenNotFlushed's name, which is how storage-full.ts knows it on either side of the in-memory pair. */
export const WRITTEN_NOT_FLUSHED = "WrittenNotFlushed";

export class WrittenNotFlushed extends Error {
  readonly code: string | undefined;

  constructor(
    readonly path: string,
    flushError: unknown,
  ) {
    const reason = flushError instanceof Error ? flushError.message : String(flushError);
    super(`${path} was changed, but its folder could not be flushed: ${reason}`, { cause: flushError });
    this.name = WRITTEN_NOT_FLUSHED;
    this.code = (flushError as NodeJS.ErrnoException | undefined)?.code;
  }
}

/**
 * A `.catch` for a change its caller holds as done once it has landed: `WrittenNotFlushed` is
 * swallowed, any other error thrown (ADR 0166).
 */
export function landedIsDone(error: unknown): void {
  if (!(error instanceof WrittenNotFlushed)) throw error;
}

/**
 * Writes to a temp file beside the target, fsyncs it, renames it over the target and fsyncs
 * the folder: a reader sees the old bytes or the new ones, never half of either, and once
 * this returns the new bytes survive a power loss. `beforeRename` may refuse the write by
 * throwing, just before the rename that makes it seen: the temp file is removed. A folder flush
 * that fails after the rename is thrown as `WrittenNotFlushed`: the old bytes are gone, so the
 * write cannot be undone as a create is (adr/0112), and its caller must know it landed.
 */
export async function writeFileAtomic(
  path: string,
  data: string | Uint8Array,
  beforeRename?: () => void,
): Promise<void> {
  const temp = tempPathBeside(path);
  try {
    await writeNewFileSynced(temp, data);
    beforeRename?.();
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
  try {
    await syncDir(dirname(path));
  } catch (error) {
    throw new WrittenNotFlushed(path, error);
  }
}

/** How a JSON record is stored: indented, one trailing newline. */
export function storedJsonText(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

export async function writeJsonAtomic(
  path: string,
  value: unknown,
  beforeRename?: () => void,
): Promise<void> {
  await writeFileAtomic(path, storedJsonText(value), beforeRename);
}

/**
 * A stored JSON file that does not parse, named by its path and the line and column where it
 * stops being JSON, never by its text (it may hold a secret). A SyntaxError, as JSON.parse's was.
 */
export class CorruptJson extends SyntaxError {
  constructor(
    readonly path: string,
    readonly where: string,
  ) {
    super(`${path} is not valid JSON (${where}).`);
    this.name = "CorruptJson";
  }
}

/** Parses `text`, read from `path`; a failure is `CorruptJson`, naming the file. */
export function parseStoredJson(path: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new CorruptJson(path, describeJsonFault(text));
  }
}

/** Reads a JSON file; `undefined` when it does not exist. One that does not parse is `CorruptJson`. */
export async function readJsonIfExists(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  return parseStoredJson(path, text);
}

/**
 * `readJsonIfExists` for a file boot cannot go on without understanding: one that does not parse
 * stops the boot, named, with what to do, as a corrupt workspace.json or credential does.
 */
export async function readJsonAtBoot(path: string): Promise<unknown> {
  try {
    return await readJsonIfExists(path);
  } catch (error) {
    if (error instanceof CorruptJson) {
      throw new BootError(`${error.message} Restore it from a backup, or move it out of the data root.`);
    }
    throw error;
  }
}
