import type { Stats } from "node:fs";
import { lstat } from "node:fs/promises";
import { basename } from "node:path";
import { AtriumError } from "../../errors.ts";
import {
  type FolderAllowance,
  type NotOpened,
  type OpenedFile,
  openFileBelow,
  type PinnedFolder,
} from "../../storage/no-follow.ts";
import type { SkillScope } from "./model.ts";

/** A skill's file in its folder. */
export const SKILL_FILE = "SKILL.md";

/**
 * The largest SKILL.md Atrium writes or reads, in UTF-8 bytes. A skill's text is read whole to be
 * listed (its body then let go) and whenever it is shown: without a bound, a member's ten 3.9 MB
 * user skills held 42 MB of heap when listings kept bodies, and they may create 500 (adr/0098). The Agent Skills
 * guidance keeps SKILL.md under 500 lines with detail in bundled files (read on demand, not
 * held); this repository's skill is 673 bytes. 256 KiB is some 64,000 tokens, more than a client
 * gives one skill, and the same bound as one conversation event.
 */
export const MAX_SKILL_FILE_BYTES = 256 * 1024;

/**
 * The most of an existing SKILL.md or saved version Atrium reads to edit or show it: the HTTP body
 * bound a write had before MAX_SKILL_FILE_BYTES, so a skill saved then can still be read and
 * shortened (the write that shortens it is checked against MAX_SKILL_FILE_BYTES). Listings and
 * the reads of a listed skill's body keep to MAX_SKILL_FILE_BYTES.
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
 * Why a symlink in a skill's folder is not read: it can point anywhere the process can read,
 * outside the data root, to a file the folder's review and permissions do not cover (adr/0139).
 */
export const SYMLINK_REFUSED = "is a symlink, which Atrium does not follow: put the file itself in its place";

/** Why a file opened through a folder swapped for a symlink is not read (adr/0139). */
export const THROUGH_LINK_REFUSED =
  "is reached through a folder that is a symlink, which Atrium does not follow: put the folder itself in its place";

/**
 * Why a file with a second name (a hard link) is not read: the other name may be anywhere on its
 * file system, a file the folder's review and permissions do not cover, and nothing tells which.
 */
export const HARD_LINK_REFUSED =
  "is a hard link (the file has another name, which may be outside this folder), which Atrium does not read: put a copy of the file itself in its place";

const REFUSED: Record<Exclude<NotOpened["why"], "not_regular">, string> = {
  symlink: SYMLINK_REFUSED,
  through_symlink: THROUGH_LINK_REFUSED,
  hard_link: HARD_LINK_REFUSED,
};

/**
 * The one reader of a SKILL.md or a saved version below scope folder `within`: its text, or
 * `undefined` when there is none. Anything but a regular file with one name (a FIFO, a device, a
 * folder, a symlink, a hard link but in the platform's folder) is refused without reading:
 * reading a FIFO blocks a thread of the pool until someone writes to it, so a request never
 * answered and boot recovery would hang (adr/0082), and a symlink is never followed, whatever it
 * points to, nor a folder on the way that is one (adr/0139, 0145). It is opened as openSkillFile
 * does: `within` as a path is a workspace's or a person's `skills/` (a write's or a history's
 * read), which may not be a link; a listing passes the scope folder it pinned.
 */
export async function readSkillFile(
  path: string,
  within: string | PinnedFolder,
  maxBytes = MAX_SKILL_FILE_BYTES,
): Promise<string | undefined> {
  const opened = await openSkillFile(path, within);
  if (opened === undefined) return undefined;
  try {
    refuseUnreadable(path, opened.info, maxBytes);
    return await opened.handle.readFile("utf8");
  } finally {
    await opened.handle.close();
  }
}

/**
 * `path`, a regular file below scope folder `within`, opened by the storage layer's one opener
 * that follows no link (openFileBelow: never blocking, never through a symlink at the last step or
 * through a folder on the way swapped for one after the listing, such as a bundled file's
 * `references/` or the skill folder itself); undefined when nothing is there. What it refuses is
 * a SkillFileRefused saying what to do. `within` is pinned at this open with what `allow` allows
 * (scopeFolderAllows: by default a folder that is no link, Atrium's own), or by the caller that
 * checked it (a listing of a scope folder pins it once for all its files: skill-dirs.ts).
 */
export async function openSkillFile(
  path: string,
  within: string | PinnedFolder,
  allow: FolderAllowance = {},
): Promise<OpenedFile | undefined> {
  const opened = await openFileBelow(path, within, allow);
  if (opened === undefined || !("why" in opened)) return opened;
  if (opened.why === "not_regular") throw notRegular(path, opened.info);
  throw new SkillFileRefused(path, REFUSED[opened.why]);
}

/**
 * What a scope's folder may be when its files are read (pinFolder). A workspace's or a person's
 * `skills/` is Atrium's own: never a link, nothing in it a hard link (adr/0139, 0145). An org
 * folder is the operator's configured place, which may be a link; an org file with a second name
 * is still refused (a copy can be put in its place). The platform's ships with Atrium's code,
 * wherever it is installed (a link too), by a package store that may hard-link every file
 * (ostree, Nix, pnpm), where no copy can be put in place: its files may have a second name.
 */
export function scopeFolderAllows(scope: SkillScope): FolderAllowance {
  if (scope === "platform") return { link: true, hardLinks: true };
  return scope === "org" ? { link: true } : {};
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
  if (!info.isFile()) throw notRegular(path, info);
  // Never read whole into memory: an operator's file over the limit is a problem, not a skill.
  if (info.size > maxBytes) {
    const bound = maxBytes === MAX_SKILL_FILE_BYTES ? "a SKILL.md may" : "Atrium reads of such a file";
    throw new SkillFileRefused(path, `holds ${info.size} bytes, over the ${maxBytes} ${bound}`);
  }
}

function notRegular(path: string, info: Stats): SkillFileRefused {
  return new SkillFileRefused(path, `is ${kindOf(info)}, not a regular file`);
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
