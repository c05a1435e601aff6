import type { Stats } from "node:fs";

// When what was read from a file may be kept: while the file is the same, and only once its last
// change is older than a file system's time tick. The skill listings (adr/0051) and the operator's
// catalog folder (adr/0038) keep what they read by this one rule.

/**
 * A change newer than this, at the time of a read, is not trusted to show in a later stamp: file
 * systems keep times to a tick (ext4: a few ms; others up to 2 s), so an edit in the same tick,
 * keeping the size, leaves every stamp as it was. What was read that close to a change is read
 * again on its next use, until its newest time is older: git's "racy" rule (adr/0051).
 */
export const RACY_MS = 2_000;

/**
 * One version of a file: the same file is the same size, modification time, change time and
 * inode. The change time moves when a copy that keeps its source's modification time lands
 * (`cp -p`, `touch -r`, `rsync -t`), and the inode when a file is replaced by a rename.
 */
export function fileStamp(info: Pick<Stats, "size" | "mtimeMs" | "ctimeMs" | "ino">): string {
  return `${info.size}:${info.mtimeMs}:${info.ctimeMs}:${info.ino}`;
}

/** When a file last changed as its times tell: its content (mtime) or its inode (ctime). */
export function lastChangeMs(info: Pick<Stats, "mtimeMs" | "ctimeMs">): number {
  return Math.max(info.mtimeMs, info.ctimeMs);
}

/** Whether what was read at `now` of something last changed at `changedMs` may miss a later change. */
export function isRacy(changedMs: number, now: number): boolean {
  return now - changedMs < RACY_MS;
}
