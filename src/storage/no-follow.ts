import { constants, type Stats } from "node:fs";
import { type FileHandle, lstat, open, readdir, readlink, realpath } from "node:fs/promises";
import { isAbsolute, join, relative, sep } from "node:path";

/** A regular file below a folder, open for reading, and its handle's stat. */
export interface OpenedFile {
  readonly handle: FileHandle;
  readonly info: Stats;
}

/**
 * Why openFileBelow opened nothing at a path that is there: it is a symbolic link, it was reached
 * through a folder that is one, or it is not a regular file (`info` says what it is).
 */
export type NotOpened = { why: "symlink" } | { why: "through_symlink" } | { why: "not_regular"; info: Stats };

/**
 * `path`, a file below folder `within`, open for reading without following a symbolic link
 * anywhere below `within`; undefined when nothing is there. The one way Atrium reads a file whose
 * folder an operator or a member can change (a skill's files, adr/0139; an archived workspace's
 * records, adr/0142, 0145). The caller closes the handle and says what a refusal means.
 *
 * The path is lstat'ed first, so a FIFO or device is never opened, then opened with O_NOFOLLOW
 * (a link swapped in at the last step fails) and O_NONBLOCK (a FIFO swapped in opens at once and
 * its handle's stat refuses it: reading one blocks a thread of the pool for good, adr/0082).
 * O_NOFOLLOW guards the last step only, and Node has no openat, so the handle is then checked to
 * be the file asked for: a folder on the way swapped for a link after its caller checked it would
 * have it read wherever the link points.
 */
export async function openFileBelow(
  path: string,
  within: string,
): Promise<OpenedFile | NotOpened | undefined> {
  const segments = segmentsBelow(within, path);
  const named = await lstat(path).catch(missingAsUndefined);
  if (named === undefined) return undefined;
  if (named.isSymbolicLink()) return { why: "symlink" };
  if (!named.isFile()) return { why: "not_regular", info: named };
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return undefined;
    if (code === "ELOOP") return { why: "symlink" };
    throw error;
  }
  let kept = false;
  try {
    if (!(await isWhereAsked(handle, path, within, segments))) return { why: "through_symlink" };
    const info = await handle.stat();
    if (!info.isFile()) return { why: "not_regular", info };
    kept = true;
    return { handle, info };
  } finally {
    if (!kept) await handle.close();
  }
}

/**
 * Whether `handle`, opened at `path` (`segments` below `within`), is that file reached through
 * no link. On Linux the kernel names the file a handle holds (`/proc/self/fd/N`), as it was
 * opened, and that must be `path` below `within`'s real path (an operator's configured folder,
 * or the data root, may itself be a link); " (deleted)" follows it once a save renamed another
 * file over it, still the one asked for. Without /proc, each folder below `within` is lstat'ed
 * after the open and must be a real folder, not a link, and `path` must name the handle's file.
 */
async function isWhereAsked(
  handle: FileHandle,
  path: string,
  within: string,
  segments: readonly string[],
): Promise<boolean> {
  const opened = await readlink(`/proc/self/fd/${handle.fd}`).catch(() => undefined);
  if (opened !== undefined) {
    const asked = join(await realpath(within), ...segments);
    return opened === asked || opened === `${asked} (deleted)`;
  }
  let folder = within;
  for (const segment of segments.slice(0, -1)) {
    folder = join(folder, segment);
    if ((await lstat(folder).catch(missingAsUndefined))?.isDirectory() !== true) return false;
  }
  const [named, held] = [await lstat(path).catch(missingAsUndefined), await handle.stat()];
  return named !== undefined && named.dev === held.dev && named.ino === held.ino;
}

/**
 * Reads below one folder, `top` (checked by its caller), without following a symbolic link
 * anywhere beneath it: each folder on the way is lstat'ed and each file opened by openFileBelow.
 * What is not a real folder or a regular file, or is reached through a folder swapped for a link
 * since it was checked, is not read; it is noted in `leftAlone` (`<path>: <what it is>`) for the
 * caller to report. An archived workspace read through a link would act on whatever the link
 * points to, another workspace's records included (ADR 0142, 0145).
 */
export class NoFollowReader {
  readonly leftAlone: string[] = [];

  constructor(private readonly top: string) {}

  /** Whether `path`, and every folder between `top` and it, is a real folder; false when missing. */
  async isFolder(path: string): Promise<boolean> {
    let at = this.top;
    for (const segment of segmentsBelow(this.top, path)) {
      at = join(at, segment);
      const info = await lstat(at).catch(missingAsUndefined);
      if (info === undefined) return false;
      if (!info.isDirectory()) {
        this.leaveAlone(at, info.isSymbolicLink() ? LINK : "not a folder");
        return false;
      }
    }
    return true;
  }

  /** The real folders directly in `dir` (a folder isFolder accepted); any other entry is noted. */
  async foldersIn(dir: string): Promise<string[]> {
    const entries = await readdir(dir, { withFileTypes: true }).catch(missingAsUndefined);
    const folders: string[] = [];
    for (const entry of entries ?? []) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) folders.push(path);
      else this.leaveAlone(path, entry.isSymbolicLink() ? LINK : "not a folder");
    }
    return folders;
  }

  /** The text of regular file `path` below `top`; undefined when missing or left alone. */
  async readText(path: string): Promise<string | undefined> {
    const opened = await openFileBelow(path, this.top);
    if (opened === undefined) return undefined;
    if ("why" in opened) {
      this.leaveAlone(path, LEFT_ALONE[opened.why]);
      return undefined;
    }
    try {
      return await opened.handle.readFile("utf8");
    } finally {
      await opened.handle.close();
    }
  }

  private leaveAlone(path: string, what: string): void {
    this.leftAlone.push(`${path}: ${what}`);
  }
}

const LINK = "a symbolic link, never followed";

const LEFT_ALONE: Record<NotOpened["why"], string> = {
  symlink: LINK,
  through_symlink: "reached through a folder that is a symbolic link, never followed",
  not_regular: "not a regular file",
};

/** The segments of `path` below `within`; a path that is not below it is a caller's mistake. */
function segmentsBelow(within: string, path: string): string[] {
  const inside = relative(within, path);
  if (inside === "" || inside === ".." || inside.startsWith(`..${sep}`) || isAbsolute(inside)) {
    throw new RangeError(`${path} is not below ${within}.`);
  }
  return inside.split(sep);
}

function missingAsUndefined(error: unknown): undefined {
  if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
  throw error;
}
