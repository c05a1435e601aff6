import { constants, type Stats } from "node:fs";
import { lstat, open, stat } from "node:fs/promises";

/** A skill's file in its folder. */
export const SKILL_FILE = "SKILL.md";

/**
 * A change newer than this, at the time of a read, is not trusted to show in a later stamp: file
 * systems keep times to a tick (ext4: a few ms; others up to 2 s). What was read that close to a
 * change is read again on its next use, until its newest time is older (adr/0051).
 */
export const RACY_MS = 2_000;

/** A SKILL.md Atrium will not read: it names the file and what an operator or member can do. */
export class SkillFileRefused extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`${SKILL_FILE} ${reason}`);
  }
}

/**
 * The one reader of a SKILL.md: its text, or `undefined` when there is none. Anything but a
 * regular file (a FIFO, a device, a folder) is refused without reading: reading a FIFO blocks a
 * thread of the pool until someone writes to it, so a request never answered and boot recovery
 * would hang (adr/0082). The path is stat'ed first, so a non-regular file is never opened, and the
 * file is then opened without blocking and checked again by its handle, so one swapped in between
 * is refused too. A symlink to a regular file is read, as the listing always has.
 */
export async function readSkillFile(path: string): Promise<string | undefined> {
  const info = await stat(path).catch(missingAsUndefined);
  if (info === undefined) return undefined;
  refuseUnreadable(path, info);
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK).catch(missingAsUndefined);
  if (handle === undefined) return undefined;
  try {
    refuseUnreadable(path, await handle.stat());
    return await handle.readFile("utf8");
  } finally {
    await handle.close();
  }
}

/** Whether `path` exists at all, as anything: what create and delete need, without reading it. */
export async function skillFileExists(path: string): Promise<boolean> {
  return (await lstat(path).catch(missingAsUndefined)) !== undefined;
}

/** Throws SkillFileRefused for a file that must not be read. */
export function refuseUnreadable(path: string, info: Stats): void {
  if (!info.isFile()) throw new SkillFileRefused(path, `is ${kindOf(info)}, not a regular file`);
}

function kindOf(info: Stats): string {
  if (info.isFIFO()) return "a FIFO";
  if (info.isDirectory()) return "a folder";
  if (info.isSocket()) return "a socket";
  if (info.isCharacterDevice() || info.isBlockDevice()) return "a device";
  return "not a file";
}

function missingAsUndefined(error: unknown): undefined {
  if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
  throw error;
}
