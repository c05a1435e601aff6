import { constants } from "node:fs";
import { type FileHandle, lstat, open, readdir } from "node:fs/promises";
import { isAbsolute, join, relative, sep } from "node:path";

/**
 * Reads below one folder, `top` (checked by its caller), without following a symbolic link
 * anywhere beneath it: each folder on the way is lstat'ed and each file opened with O_NOFOLLOW,
 * then checked again by its handle. What is not a real folder or a regular file is not read; it
 * is noted in `leftAlone` (`<path>: <what it is>`) for the caller to report. An archived
 * workspace read through a link would act on whatever the link points to, another workspace's
 * records included (ADR 0142). Node has no openat, so a folder swapped for a link between its
 * lstat and a read below it is not caught here: a releaser also checks what it reads is its own.
 */
export class NoFollowReader {
  readonly leftAlone: string[] = [];

  constructor(private readonly top: string) {}

  /** Whether `path`, and every folder between `top` and it, is a real folder; false when missing. */
  async isFolder(path: string): Promise<boolean> {
    let at = this.top;
    for (const segment of this.segmentsTo(path)) {
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

  /** The text of regular file `path` in a folder isFolder or foldersIn accepted; undefined when missing. */
  async readText(path: string): Promise<string | undefined> {
    // O_NONBLOCK: a FIFO put there is refused by its handle's type, not waited on (adr/0082).
    const flags = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
    let handle: FileHandle;
    try {
      handle = await open(path, flags);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return undefined;
      if (code === "ELOOP") {
        this.leaveAlone(path, LINK);
        return undefined;
      }
      throw error;
    }
    try {
      if (!(await handle.stat()).isFile()) {
        this.leaveAlone(path, "not a regular file");
        return undefined;
      }
      return await handle.readFile("utf8");
    } finally {
      await handle.close();
    }
  }

  private segmentsTo(path: string): string[] {
    const inside = relative(this.top, path);
    if (inside === "" || inside === ".." || inside.startsWith(`..${sep}`) || isAbsolute(inside)) {
      throw new RangeError(`${path} is not below ${this.top}.`);
    }
    return inside.split(sep);
  }

  private leaveAlone(path: string, what: string): void {
    this.leftAlone.push(`${path}: ${what}`);
  }
}

const LINK = "a symbolic link, never followed";

function missingAsUndefined(error: unknown): undefined {
  if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
  throw error;
}
