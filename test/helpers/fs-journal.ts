import type { MakeDirectoryOptions } from "node:fs";
import { createRequire, syncBuiltinESMExports } from "node:module";
import { dirname, join, relative, sep } from "node:path";

type FsPromises = typeof import("node:fs/promises");
type Watched = Pick<FsPromises, "open" | "mkdir" | "rename" | "readFile">;

// node:fs/promises as a mutable object: its ESM bindings, which the code under test imports,
// follow a change to it once syncBuiltinESMExports() is called.
const fsPromises = createRequire(import.meta.url)("node:fs/promises") as Watched;

/** One step that reaches the disk's folder entries, a flush or a whole-file read, in order. */
export type JournalEntry =
  | { op: "sync"; path: string }
  | { op: "read"; path: string }
  | { op: "mkdir"; path: string }
  | { op: "rename"; from: string; to: string };

export interface FsJournal {
  entries: JournalEntry[];
  /** Every file and folder fsynced, in order. */
  synced: string[];
  /** Every file read whole (`readFile` on a path), in order. */
  read: string[];
  /**
   * The folders made whose entry no later fsync of their parent flushed (directly, or after the
   * folder was renamed into another place): what a power loss could take away with all inside.
   */
  unflushedFolders(): string[];
}

/** Faults to inject while the journal runs, at the calls it watches. */
export interface FsFaults {
  /**
   * The error a flush (`FileHandle.sync`) of `path` fails with instead, or undefined to flush it;
   * a promise of either holds the flush until it settles (what other work does meanwhile).
   */
  sync?(path: string): Error | undefined | Promise<Error | undefined>;
  /** A promise that holds a whole-file read of `path`, once read, until it settles; or undefined. */
  read?(path: string): Promise<void> | undefined;
}

/**
 * Runs `work` and answers what it did to folder entries, what it flushed and what it read. A power
 * loss keeps only what was flushed, so a test of durability asks whether each file and each folder
 * entry a write made (a new folder, a rename) was synced before it returned (adr/0024); a test of
 * an index asks which files it read. `faults` makes chosen flushes fail, as a disk's error does
 * (a failed one is not journalled).
 */
export async function journalDuring(work: () => Promise<unknown>, faults: FsFaults = {}): Promise<FsJournal> {
  const entries: JournalEntry[] = [];
  const real: Watched = {
    open: fsPromises.open,
    mkdir: fsPromises.mkdir,
    rename: fsPromises.rename,
    readFile: fsPromises.readFile,
  };
  const open = (async (path, ...rest) => {
    const handle = await real.open(path, ...rest);
    const sync = handle.sync.bind(handle);
    handle.sync = async () => {
      const fault = await faults.sync?.(String(path));
      if (fault) throw fault;
      await sync();
      entries.push({ op: "sync", path: String(path) });
    };
    return handle;
  }) as FsPromises["open"];
  const mkdir = (async (path: string, options?: MakeDirectoryOptions) => {
    const first = await real.mkdir(path, options);
    const made = typeof options === "object" && options?.recursive ? first : String(path);
    if (made !== undefined)
      for (const folder of foldersFrom(made, String(path))) entries.push({ op: "mkdir", path: folder });
    return first;
  }) as FsPromises["mkdir"];
  const rename = (async (from, to) => {
    await real.rename(from, to);
    entries.push({ op: "rename", from: String(from), to: String(to) });
  }) as FsPromises["rename"];
  const readFile = (async (path, options) => {
    const content = await real.readFile(path, options);
    if (typeof path === "string") {
      await faults.read?.(path);
      entries.push({ op: "read", path });
    }
    return content;
  }) as FsPromises["readFile"];
  Object.assign(fsPromises, { open, mkdir, rename, readFile });
  syncBuiltinESMExports();
  try {
    await work();
  } finally {
    Object.assign(fsPromises, real);
    syncBuiltinESMExports();
  }
  return {
    entries,
    synced: entries.flatMap((entry) => (entry.op === "sync" ? [entry.path] : [])),
    read: entries.flatMap((entry) => (entry.op === "read" ? [entry.path] : [])),
    unflushedFolders: () => unflushedFolders(entries),
  };
}

/** `first` and each folder below it down to `last` (what one recursive mkdir made). */
function foldersFrom(first: string, last: string): string[] {
  const below = relative(first, last);
  const folders = [first];
  if (below === "") return folders;
  for (const segment of below.split(sep)) folders.push(join(folders.at(-1) ?? first, segment));
  return folders;
}

function unflushedFolders(entries: readonly JournalEntry[]): string[] {
  return entries.flatMap((entry, at) => {
    if (entry.op !== "mkdir") return [];
    let place = entry.path;
    for (const later of entries.slice(at + 1)) {
      if (later.op === "rename" && later.from === place) place = later.to;
      if (later.op === "sync" && later.path === dirname(place)) return [];
    }
    return [entry.path];
  });
}
