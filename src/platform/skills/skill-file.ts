import { constants, type Stats } from "node:fs";
import { type FileHandle, lstat, open, readlink, realpath } from "node:fs/promises";
import { basename, dirname, join, relative } from "node:path";
import { AtriumError } from "../../errors.ts";

/** A skill's file in its folder. */
export const SKILL_FILE = "SKILL.md";

/**
 * A change newer than this, at the time of a read, is not trusted to show in a later stamp: file
 * systems keep times to a tick (ext4: a few ms; others up to 2 s). What was read that close to a
 * change is read again on its next use, until its newest time is older (adr/0051).
 */
export const RACY_MS = 2_000;

/**
 * The largest SKILL.md Atrium writes or reads, in UTF-8 bytes. A skill's text is held in memory
 * while it is listed, and every request of its owner resolves it: without a bound, a member's ten
 * 3.9 MB user skills held 42 MB of heap, and they may create 500 (adr/0098). The Agent Skills
 * guidance keeps SKILL.md under 500 lines with detail in bundled files (read on demand, not
 * held); this repository's skill is 673 bytes. 256 KiB is some 64,000 tokens, more than a client
 * gives one skill, and the same bound as one conversation event.
 */
export const MAX_SKILL_FILE_BYTES = 256 * 1024;

/**
 * The most of an existing SKILL.md or saved version Atrium reads to edit or show it: the HTTP body
 * bound a write had before MAX_SKILL_FILE_BYTES, so a skill saved then can still be read and
 * shortened (the write that shortens it is checked against MAX_SKILL_FILE_BYTES). Listings keep
 * to MAX_SKILL_FILE_BYTES: they hold what they read.
 */
export const MAX_EDITED_SKILL_FILE_BYTES = 4 * 1024 * 1024;

/** A write would make a SKILL.md over MAX_SKILL_FILE_BYTES: refused before anything is written. */
export class SkillTooLarge extends AtriumError {
  constructor(bytes: number) {
    super(
      "skill_too_large",
      413,
      `This skill's SKILL.md would be ${bytes} bytes; one may be at most ${MAX_SKILL_FILE_BYTES}. Nothing was written: shorten the body, or move reference material into files beside SKILL.md.`,
    );
  }
}

/** Refuses a SKILL.md text over MAX_SKILL_FILE_BYTES. */
export function refuseTooLarge(text: string): void {
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > MAX_SKILL_FILE_BYTES) throw new SkillTooLarge(bytes);
}

/** A SKILL.md (or a saved version of one) Atrium will not read: it names the file and what to do. */
export class SkillFileRefused extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`${basename(path)} ${reason}`);
  }
}

/**
 * How a skill's files are opened: never blocking (a FIFO swapped in after the check opens at
 * once, and its handle's stat refuses it) and never through a symlink at the last step.
 */
export const READ_NOT_FOLLOWING = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW;

/**
 * Why a symlink in a skill's folder is not read: it can point anywhere the process can read,
 * outside the data root, to a file the folder's review and permissions do not cover (adr/0139).
 */
export const SYMLINK_REFUSED = "is a symlink, which Atrium does not follow: put the file itself in its place";

/** Why a file opened through a folder swapped for a symlink is not read (adr/0139). */
export const THROUGH_LINK_REFUSED =
  "is reached through a folder that is a symlink, which Atrium does not follow: put the folder itself in its place";

/**
 * The one reader of a SKILL.md or a saved version below scope folder `within`: its text, or
 * `undefined` when there is none. Anything but a regular file (a FIFO, a device, a folder, a
 * symlink) is refused without reading: reading a FIFO blocks a thread of the pool until someone
 * writes to it, so a request never answered and boot recovery would hang (adr/0082), and a
 * symlink is never followed, whatever it points to (adr/0139). The path is lstat'ed first, so
 * such a file is never opened, and the file is then opened as openNotFollowing does and checked
 * again by its handle, so one swapped in between is refused too.
 */
export async function readSkillFile(
  path: string,
  within: string,
  maxBytes = MAX_SKILL_FILE_BYTES,
): Promise<string | undefined> {
  const info = await lstat(path).catch(missingAsUndefined);
  if (info === undefined) return undefined;
  refuseUnreadable(path, info, maxBytes);
  const handle = await openNotFollowing(path, within);
  if (handle === undefined) return undefined;
  try {
    refuseUnreadable(path, await handle.stat(), maxBytes);
    return await handle.readFile("utf8");
  } finally {
    await handle.close();
  }
}

/**
 * `path`, below scope folder `within`, opened with READ_NOT_FOLLOWING; undefined when nothing is
 * there. A symlink put in its place after it was lstat'ed fails the open (ELOOP): refused as the
 * lstat would have. O_NOFOLLOW guards the last step only, so the handle is then checked to be
 * where it was asked for: a folder on the way swapped for a link after the listing (a bundled
 * file's `references/`, the skill folder itself) would have it read wherever the link points.
 */
export async function openNotFollowing(path: string, within: string): Promise<FileHandle | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(path, READ_NOT_FOLLOWING);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return undefined;
    if (code === "ELOOP") throw new SkillFileRefused(path, SYMLINK_REFUSED);
    throw error;
  }
  try {
    if (!(await isWhereAsked(handle, path, within))) throw new SkillFileRefused(path, THROUGH_LINK_REFUSED);
    return handle;
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/**
 * Whether `handle`, opened at `path`, is that file below `within` reached through no link. On
 * Linux the kernel names the file a handle holds (`/proc/self/fd/N`), as it was opened, and that
 * must be `path` below the scope folder's real path (an operator's org folder may itself be a
 * link); " (deleted)" follows it once a save renamed another file over it, still the one asked
 * for. Without /proc, each folder below `within` is lstat'ed after the open, none may be a link,
 * and `path` must name the handle's file.
 */
async function isWhereAsked(handle: FileHandle, path: string, within: string): Promise<boolean> {
  const opened = await readlink(`/proc/self/fd/${handle.fd}`).catch(() => undefined);
  if (opened !== undefined) {
    const asked = join(await realpath(within), relative(within, path));
    return opened === asked || opened === `${asked} (deleted)`;
  }
  for (let folder = dirname(path); folder.length > within.length; folder = dirname(folder)) {
    if (await isSymlink(folder)) return false;
  }
  const [named, held] = [await lstat(path).catch(missingAsUndefined), await handle.stat()];
  return named !== undefined && named.dev === held.dev && named.ino === held.ino;
}

/** Whether `path` is a symlink itself (lstat: never followed); false when nothing is there. */
export async function isSymlink(path: string): Promise<boolean> {
  return (await lstat(path).catch(missingAsUndefined))?.isSymbolicLink() ?? false;
}

/** Whether `path` exists at all, as anything: what create and delete need, without reading it. */
export async function skillFileExists(path: string): Promise<boolean> {
  return (await lstat(path).catch(missingAsUndefined)) !== undefined;
}

/**
 * Throws SkillFileRefused for a file that must not be read: a symlink, not a regular file, or too
 * large. `info` is an lstat's, or an open handle's.
 */
export function refuseUnreadable(path: string, info: Stats, maxBytes = MAX_SKILL_FILE_BYTES): void {
  if (info.isSymbolicLink()) throw new SkillFileRefused(path, SYMLINK_REFUSED);
  if (!info.isFile()) throw new SkillFileRefused(path, `is ${kindOf(info)}, not a regular file`);
  // Never read whole into memory: an operator's file over the limit is a problem, not a skill.
  if (info.size > maxBytes) {
    const bound = maxBytes === MAX_SKILL_FILE_BYTES ? "a SKILL.md may" : "Atrium reads of such a file";
    throw new SkillFileRefused(path, `holds ${info.size} bytes, over the ${maxBytes} ${bound}`);
  }
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
