import { constants, type Stats } from "node:fs";
import { type FileHandle, lstat, open, readdir, readlink, realpath } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative, sep } from "node:path";

/** A regular file below a folder, open for reading, and its handle's stat. */
export interface OpenedFile {
  readonly handle: FileHandle;
  readonly info: Stats;
}

/**
 * Why openFileBelow opened nothing at a path that is there: it is a symbolic link, it was reached
 * through a folder that is one, it is not a regular file (`info` says what it is), or it is a
 * regular file with more than one name (a hard link: its other name may be anywhere on its file
 * system, outside the folder).
 */
export type NotOpened =
  | { why: "symlink" }
  | { why: "through_symlink" }
  | { why: "not_regular"; info: Stats }
  | { why: "hard_link" };

/**
 * What a folder read below may be beyond a real folder of regular files with one name each. A
 * folder Atrium keeps (`_archive/`, a workspace's or a person's `skills/`) allows neither.
 */
export interface FolderAllowance {
  /** The folder itself may be a symbolic link (an operator's configured folder), resolved once. */
  readonly link?: boolean;
  /**
   * Its files may have a second name: it ships with Atrium's own code, which a package store may
   * install hard-linked (ostree, Nix's optimised store, pnpm), and no one else writes there.
   */
  readonly hardLinks?: boolean;
}

/**
 * A folder files are opened below, as named (`path`) and as it really was when pinned (`real`):
 * a file is opened only if the kernel names it below `real`, so the folder swapped for a link
 * since is not read through, wherever the link points. `hardLinks`: FolderAllowance's.
 */
export interface PinnedFolder {
  readonly path: string;
  readonly real: string;
  readonly hardLinks: boolean;
}

/**
 * `folder` pinned now. Unless `allow.link`, only its parent is resolved (the data root may be a
 * link) and the folder's own name kept, so the folder is read only while it is a real folder
 * there; with it, the folder is resolved whole, now and not again. Throws as realpath does
 * (ENOENT when missing).
 */
export async function pinFolder(folder: string, allow: FolderAllowance = {}): Promise<PinnedFolder> {
  const real = allow.link ? await realpath(folder) : join(await realpath(dirname(folder)), basename(folder));
  return { path: folder, real, hardLinks: allow.hardLinks === true };
}

/**
 * `path`, a file below folder `within`, open for reading without following a symbolic link
 * anywhere below `within`; undefined when nothing is there. The one way Atrium reads a file whose
 * folder an operator or a member can change (a skill's files, adr/0139; an archived workspace's
 * records, adr/0142, 0145). The caller closes the handle and says what a refusal means. `within`
 * given as a path is pinned at this open, with what `allow` allows (pinFolder): by default a
 * folder that is no link and holds no hard link. A caller reading several files of one folder it
 * checked pins it once and passes that.
 *
 * The path is lstat'ed first, so a FIFO or device is never opened, then opened with O_NOFOLLOW
 * (a link swapped in at the last step fails) and O_NONBLOCK (a FIFO swapped in opens at once and
 * its handle's stat refuses it: reading one blocks a thread of the pool for good, adr/0082).
 * O_NOFOLLOW guards the last step only, and Node has no openat, so the handle is then checked to
 * be the file asked for: a folder on the way swapped for a link after its caller checked it
 * would have it read wherever the link points. A folder on the way that is a looping link (ELOOP)
 * or a link to a file (ENOTDIR) is a refusal too, never thrown: it failed a whole archive release.
 * A file with a second name is refused by its handle's link count: the kernel names it as it was
 * opened, so a hard link to a file outside the folder passes every other check. Atrium's own
 * writers below such folders rename a temp file into place (storage/atomic.ts), one name each;
 * the one writer that links (createFileExclusive, two names until its temp goes) writes none of
 * the files read here. A folder pinned with `hardLinks` allowed skips that count.
 */
export async function openFileBelow(
  path: string,
  within: string | PinnedFolder,
  allow: FolderAllowance = {},
): Promise<OpenedFile | NotOpened | undefined> {
  const folder = typeof within === "string" ? within : within.path;
  const segments = segmentsBelow(folder, path);
  let handle: FileHandle;
  try {
    const named = await lstat(path);
    if (named.isSymbolicLink()) return { why: "symlink" };
    if (!named.isFile()) return { why: "not_regular", info: named };
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return undefined;
    if (code === "ELOOP" || code === "ENOTDIR") return whyNotReached(path, folder, segments);
    throw error;
  }
  let kept = false;
  try {
    const pinned =
      typeof within === "string" ? await pinFolder(within, allow).catch(unreachedAsUndefined) : within;
    if (pinned === undefined || !(await isWhereAsked(handle, pinned.real, segments))) {
      return { why: "through_symlink" };
    }
    const info = await handle.stat();
    if (!info.isFile()) return { why: "not_regular", info };
    if (info.nlink > 1 && !pinned.hardLinks) return { why: "hard_link" };
    kept = true;
    return { handle, info };
  } finally {
    if (!kept) await handle.close();
  }
}

/**
 * What the lookup of `path` that failed with ELOOP or ENOTDIR met, told by lstat'ing `within`,
 * then each folder below it in turn: a plain file (anything but a folder or a link) in a folder's
 * place, `within`'s included, holds nothing below it (undefined, as missing); a link below
 * `within` (or one whose own lookup fails: swapped again meanwhile) is `through_symlink`. Every
 * folder real, it was the path's last step: a link there (O_NOFOLLOW's ELOOP) is `symlink`, and
 * anything else there now was swapped back since, refused all the same.
 */
async function whyNotReached(
  path: string,
  within: string,
  segments: readonly string[],
): Promise<NotOpened | undefined> {
  // `within` may be a link its caller allowed (an operator's folder), looked up through below.
  const top = await lstat(within).catch(unreachedAsUndefined);
  if (top !== undefined && !top.isDirectory() && !top.isSymbolicLink()) return undefined;
  let at = within;
  for (const segment of segments.slice(0, -1)) {
    at = join(at, segment);
    const info = await lstat(at).catch(unreachedAsUndefined);
    if (info === undefined || info.isSymbolicLink()) return { why: "through_symlink" };
    if (!info.isDirectory()) return undefined;
  }
  const named = await lstat(path).catch(unreachedAsUndefined);
  return named?.isSymbolicLink() ? { why: "symlink" } : { why: "through_symlink" };
}

/** A lookup's failure for what is (or is not) on the path's way as undefined; any other thrown. */
function unreachedAsUndefined(error: unknown): undefined {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "ENOENT" || code === "ELOOP" || code === "ENOTDIR") return undefined;
  throw error;
}

/**
 * Whether `handle`, opened at a path `segments` below a folder whose real path is `real`, is that
 * file reached through no link. On Linux the kernel names the file a handle holds
 * (`/proc/self/fd/N`), as it was opened, and that must be `path`'s segments below `real`;
 * " (deleted)" follows it once a save renamed another file over it, still the one asked for.
 * Without /proc, `real` and each folder below it are lstat'ed after the open and must be real
 * folders, not links, and the file there must be the handle's.
 */
async function isWhereAsked(handle: FileHandle, real: string, segments: readonly string[]): Promise<boolean> {
  const opened = await readlink(`/proc/self/fd/${handle.fd}`).catch(() => undefined);
  const asked = join(real, ...segments);
  if (opened !== undefined) return opened === asked || opened === `${asked} (deleted)`;
  let folder = real;
  for (const segment of ["", ...segments.slice(0, -1)]) {
    folder = join(folder, segment);
    if ((await lstat(folder).catch(unreachedAsUndefined))?.isDirectory() !== true) return false;
  }
  const [named, held] = [await lstat(asked).catch(unreachedAsUndefined), await handle.stat()];
  return named !== undefined && named.dev === held.dev && named.ino === held.ino;
}

/**
 * Reads below one folder, `top` (checked by its caller), without following a symbolic link
 * anywhere beneath it: each folder on the way is lstat'ed and each file opened by openFileBelow.
 * What is not a real folder or a regular file, has a second name, or is reached through a folder
 * swapped for a link since it was checked (`top` itself included: pinned at the reader's first
 * use, once seen to be a real folder, or by its caller) is not read; it is noted in `leftAlone`
 * (`<path>: <what it is>`) for the caller to report. An archived workspace read through a link
 * would act on whatever the link points to, another workspace's records included (ADR 0142, 0145).
 */
export class NoFollowReader {
  readonly leftAlone: string[] = [];
  private readonly top: string;
  /** `top` as its caller pinned it: one that removes what was read checks it is still there (ADR 0145). */
  private readonly given: PinnedFolder | undefined;
  private pinned: Promise<PinnedFolder | undefined> | undefined;

  constructor(top: string | PinnedFolder) {
    this.top = typeof top === "string" ? top : top.path;
    this.given = typeof top === "string" ? undefined : top;
  }

  /** Whether `path`, and every folder between `top` and it, is a real folder; false when missing. */
  async isFolder(path: string): Promise<boolean> {
    if ((await this.pinTop()) === undefined) return false;
    let at = this.top;
    for (const segment of segmentsBelow(this.top, path)) {
      at = join(at, segment);
      const info = await lstat(at).catch(unreachedAsUndefined);
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
    const entries = await readdir(dir, { withFileTypes: true }).catch(async (error: unknown) => {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== "ELOOP" && code !== "ENOTDIR") return unreachedAsUndefined(error);
      // `dir`, or a folder on its way, swapped for a looping link or for a file or a link to one
      // since isFolder accepted it: noted as isFolder notes it (one a folder again was swapped
      // back meanwhile, noted all the same), so a release that found nothing here says why.
      if (await this.isFolder(dir)) this.leaveAlone(dir, LEFT_ALONE.through_symlink);
      return undefined;
    });
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
    const top = await this.pinTop();
    if (top === undefined) return undefined;
    const opened = await openFileBelow(path, top);
    if (opened === undefined) {
      // Nothing there. But a folder on its way that isFolder or foldersIn accepted and that is a
      // file or a link now was swapped since: noted, so a release that found nothing says why.
      if (await this.swappedOnTheWay(path)) this.leaveAlone(dirname(path), SWAPPED);
      return undefined;
    }
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

  /** Whether a folder between `top` and `path` is there as something other than a folder. */
  private async swappedOnTheWay(path: string): Promise<boolean> {
    let at = this.top;
    for (const segment of segmentsBelow(this.top, path).slice(0, -1)) {
      at = join(at, segment);
      const info = await lstat(at).catch(unreachedAsUndefined);
      if (info === undefined) return false;
      if (!info.isDirectory()) return true;
    }
    return false;
  }

  /**
   * `top` pinned once, at first use (or as given); undefined (a link or file noted) when it is no
   * real folder then.
   */
  private pinTop(): Promise<PinnedFolder | undefined> {
    this.pinned ??= (async () => {
      const info = await lstat(this.top).catch(unreachedAsUndefined);
      if (info === undefined) return undefined;
      if (!info.isDirectory()) {
        this.leaveAlone(this.top, info.isSymbolicLink() ? LINK : "not a folder");
        return undefined;
      }
      return this.given ?? pinFolder(this.top).catch(unreachedAsUndefined);
    })();
    return this.pinned;
  }

  private leaveAlone(path: string, what: string): void {
    this.leftAlone.push(`${path}: ${what}`);
  }
}

/**
 * Whether a `leftAlone` note says a folder changed under the reader while it read (swapped for a
 * link, or for a file after it was accepted as a folder): what else the reader saw there may have
 * moved too (an archive purge keeps the archive).
 */
export function isReachedThroughLink(note: string): boolean {
  return note.endsWith(`: ${LEFT_ALONE.through_symlink}`) || note.endsWith(`: ${SWAPPED}`);
}

const SWAPPED = "a folder accepted as one and something else now, swapped while it was read";

const LINK = "a symbolic link, never followed";

const LEFT_ALONE: Record<NotOpened["why"], string> = {
  symlink: LINK,
  through_symlink: "reached through a folder that is a symbolic link, never followed",
  not_regular: "not a regular file",
  hard_link: "a hard link (a second name of a file that may be outside this folder), never read",
};

/** The segments of `path` below `within`; a path that is not below it is a caller's mistake. */
function segmentsBelow(within: string, path: string): string[] {
  const inside = relative(within, path);
  if (inside === "" || inside === ".." || inside.startsWith(`..${sep}`) || isAbsolute(inside)) {
    throw new RangeError(`${path} is not below ${within}.`);
  }
  return inside.split(sep);
}
