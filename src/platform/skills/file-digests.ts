import { createHash } from "node:crypto";
import { type BigIntStats, lstatSync } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import type { FileDigest } from "../../sources/guidance.ts";
import { isRacy, lastChangeMs } from "../../storage/file-stamp.ts";

/**
 * At most this many digests are kept, the oldest used let go first: some 18 MiB, an entry being
 * about 550 bytes (a 100-character path, the file's identity, the digest's hex, the map's own),
 * whatever the files hold. It covers 320 skills of SKILL.md and 100 bundled files (the most
 * listed: MAX_BUNDLED_FILES), or 3,000 of ten; a caller seeing more files than that reads and
 * hashes the rest on each list, as every list did before (adr/0160).
 */
export const MAX_KEPT_DIGESTS = 32_768;

/** Read this much at a time to hash a file: a miss never holds a whole file in memory. */
const CHUNK_BYTES = 64 * 1024;

interface Kept {
  /** The file's identity when it was read, and the caller's salt. */
  stamp: string;
  digest: Readonly<FileDigest>;
}

/**
 * The SHA-256 of skills' files, kept by path with the identity of the file read there (device,
 * inode, size, modification and change times in nanoseconds), so `skills/list` reads and hashes a
 * file only when it is not the file it was: every call read and hashed every file of every skill
 * the caller sees, up to 125 MiB for one scope (adr/0160). An edit in place moves the modification
 * or change time (`cp -p` and `touch -r` set the first back, never the second), a rename over the
 * file (how Atrium writes) brings another inode, a second name (a hard link) moves the change time,
 * and a delete takes the file. A digest of a file changed within file-stamp.ts's RACY_MS of its read is not kept:
 * an edit in the same tick of a file system's clock would leave every time as it was (adr/0051).
 *
 * A digest is only ever made from a file opened as every skill file is (never through a link,
 * below its scope folder: openSkillFile), and given back only for the same path while the file
 * there is the one read (`known`, one lstat that follows no link at the last step): a folder on
 * the way swapped for a link reaches another file, whose identity is not the one kept, and the
 * caller opens it, refused. A path names one workspace's or one person's folder, so a listing is
 * never told anything another's read kept. The caller's `salt` is what a digest depends on besides
 * the bytes (a rendered SKILL.md's name, description and scope).
 */
export class FileDigests {
  private readonly kept = new Map<string, Kept>();

  constructor(
    private readonly max = MAX_KEPT_DIGESTS,
    private readonly now: () => number = Date.now,
  ) {}

  /** How many digests are kept; for tests that pin the bound. */
  get size(): number {
    return this.kept.size;
  }

  /**
   * The digest kept for `path`, if the file there is the one it was made from. Synchronous, as
   * the scope listings' stamps are (adr/0051): one lstat of a path in the kernel's cache costs a
   * few µs of CPU, a tenth of one through the thread pool.
   */
  known(path: string, salt = ""): Readonly<FileDigest> | undefined {
    const kept = this.kept.get(path);
    if (kept === undefined) return undefined;
    const info = lstatSync(path, { bigint: true, throwIfNoEntry: false });
    if (info === undefined || !info.isFile() || kept.stamp !== stampOf(info, salt)) return undefined;
    // Used again: the newest, last to go.
    this.kept.delete(path);
    this.kept.set(path, kept);
    return kept.digest;
  }

  /**
   * The digest of the file at `path`, open at `handle`, made by `digest` (hashBytes by default),
   * and kept while the file was the same after it as before and not changed within file-stamp.ts's RACY_MS.
   */
  async of(
    path: string,
    handle: FileHandle,
    salt = "",
    digest: (handle: FileHandle) => Promise<FileDigest> = hashBytes,
  ): Promise<Readonly<FileDigest>> {
    const before = await handle.stat({ bigint: true });
    const made = await digest(handle);
    const after = await handle.stat({ bigint: true });
    const stamp = stampOf(after, salt);
    const changed = lastChangeMs({ mtimeMs: Number(after.mtimeMs), ctimeMs: Number(after.ctimeMs) });
    this.kept.delete(path);
    if (stamp === stampOf(before, salt) && !isRacy(changed, this.now())) {
      this.kept.set(path, { stamp, digest: made });
      for (const oldest of this.kept.keys()) {
        if (this.kept.size <= this.max) break;
        this.kept.delete(oldest);
      }
    }
    return made;
  }
}

function stampOf(info: BigIntStats, salt: string): string {
  return `${info.dev}:${info.ino}:${info.size}:${info.mtimeNs}:${info.ctimeNs}|${salt}`;
}

/** The SHA-256 and size of what `handle` holds, read a chunk at a time from its start. */
export async function hashBytes(handle: FileHandle): Promise<FileDigest> {
  const hash = createHash("sha256");
  const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
  let size = 0;
  for (;;) {
    const { bytesRead } = await handle.read(chunk, 0, CHUNK_BYTES, size);
    if (bytesRead === 0) break;
    hash.update(chunk.subarray(0, bytesRead));
    size += bytesRead;
  }
  return { sha256: hash.digest("hex"), size };
}
