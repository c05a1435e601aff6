import { constants, type Stats } from "node:fs";
import { lstat, open, stat } from "node:fs/promises";
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
export async function readSkillFile(
  path: string,
  maxBytes = MAX_SKILL_FILE_BYTES,
): Promise<string | undefined> {
  const info = await stat(path).catch(missingAsUndefined);
  if (info === undefined) return undefined;
  refuseUnreadable(path, info, maxBytes);
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK).catch(missingAsUndefined);
  if (handle === undefined) return undefined;
  try {
    refuseUnreadable(path, await handle.stat(), maxBytes);
    return await handle.readFile("utf8");
  } finally {
    await handle.close();
  }
}

/** Whether `path` exists at all, as anything: what create and delete need, without reading it. */
export async function skillFileExists(path: string): Promise<boolean> {
  return (await lstat(path).catch(missingAsUndefined)) !== undefined;
}

/** Throws SkillFileRefused for a file that must not be read: not a regular file, or too large. */
export function refuseUnreadable(path: string, info: Stats, maxBytes = MAX_SKILL_FILE_BYTES): void {
  if (!info.isFile()) throw new SkillFileRefused(path, `is ${kindOf(info)}, not a regular file`);
  // Never read whole into memory: an operator's file over the limit is a problem, not a skill.
  if (info.size > maxBytes) {
    const bound = maxBytes === MAX_SKILL_FILE_BYTES ? "a SKILL.md may" : "Atrium reads to edit one";
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
