import type { Stats } from "node:fs";
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { type Clock, isWithin } from "../../kernel/clock.ts";
import type { Logger } from "../../log.ts";
import { fileStamp, isRacy, lastChangeMs } from "../../storage/file-stamp.ts";
import { catalogIdOf, checkServerJson, MAX_ENTRY_BYTES, type ServerJson } from "./catalog-entry.ts";

// The operator's catalog: `<catalogDir>/*.json`, one server.json each. It is read whole when the
// folder changes and served from memory otherwise; a bad file is skipped, reported and logged
// once, and never stops the rest (test/unit/platform/connections/catalog.test.ts).

/** How often a read looks at the folder for changes; between looks, memory answers. */
export const CATALOG_RECHECK_MS = 1000;
/**
 * Past this many files (by name) the rest are counted in one problem, never statted or read: a
 * catalog is curated, not a mirror.
 */
export const MAX_CATALOG_FILES = 1000;

/** A file the catalog skipped, and why; `file` is its name in its folder, never a full path. */
export interface CatalogProblem {
  file: string;
  message: string;
}

export interface ParsedEntry {
  id: string;
  file: string;
  server: ServerJson;
}

export interface FolderContents {
  entries: ParsedEntry[];
  problems: CatalogProblem[];
}

interface Snapshot extends FolderContents {
  /**
   * Each read file's name and stamp (size, modification and change times, inode), and the count
   * of names past the limit: a change to any of them is a change to the catalog. None when a file
   * changed within RACY_MS of the look, which may hide a later edit in the same tick: the next
   * look reads the files again (storage/file-stamp.ts, the skills' rule; adr/0038, amended).
   */
  fingerprint: string | undefined;
}

export class CatalogFolder {
  private snapshot: Snapshot | undefined;
  private checkedAtMs = Number.NEGATIVE_INFINITY;
  private reading: Promise<Snapshot> | undefined;
  private readonly logged = new ProblemLog();

  constructor(
    private readonly dir: string | undefined,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** The folder's entries and problems, reread only when a file was added, removed or changed. */
  async read(): Promise<FolderContents> {
    if (this.dir === undefined) return { entries: [], problems: [] };
    if (this.snapshot && isWithin(this.clock(), this.checkedAtMs, CATALOG_RECHECK_MS)) return this.snapshot;
    // Concurrent requests share one look at the folder.
    this.reading ??= this.refresh(this.dir).finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  private async refresh(dir: string): Promise<Snapshot> {
    const checkedAt = this.clock();
    const listing = await listCatalogFiles(dir);
    const fingerprint = JSON.stringify(listing);
    // A racy snapshot's fingerprint is none, which no listing matches.
    if (this.snapshot?.fingerprint !== fingerprint) {
      const contents =
        "problem" in listing ? { entries: [], problems: [listing.problem] } : await readAll(dir, listing);
      const racy = "stamps" in listing && isRacy(listing.changedMs, checkedAt);
      this.snapshot = { ...contents, fingerprint: racy ? undefined : fingerprint };
      this.logged.report(contents.problems, (problem) =>
        this.log.warn({ catalogFile: problem.file, problem: problem.message }, "catalog entry skipped"),
      );
    }
    this.checkedAtMs = checkedAt;
    return this.snapshot;
  }
}

interface FileStamp {
  name: string;
  /** fileStamp: size, modification and change times, inode. */
  stamp: string;
  size: number;
}

/** The files the catalog reads, and how many `*.json` names past its limit it left alone. */
export interface CatalogListing {
  stamps: FileStamp[];
  unread: number;
  /** The newest change among the files (lastChangeMs); -Infinity when there is none. */
  changedMs: number;
}

/**
 * The first MAX_CATALOG_FILES `*.json` files by name, stamped, and a count of the names after
 * them. Only those files are statted: a folder of 20,000 cost 20,000 stats on every recheck, and a
 * change past the limit, which nothing reads, made the whole folder be read again
 * (test/unit/platform/connections/catalog-folder.test.ts).
 */
export async function listCatalogFiles(
  dir: string,
  statFile: (path: string) => Promise<Stats> = stat,
): Promise<CatalogListing | { problem: CatalogProblem }> {
  let names: string[];
  try {
    names = (await readdir(dir, { withFileTypes: true }))
      .filter((entry) => !entry.name.startsWith(".") && entry.name.endsWith(".json") && !entry.isDirectory())
      .map((entry) => entry.name)
      .sort();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const message =
      code === "ENOENT"
        ? "The catalog folder (connections.catalogDir) does not exist; create it or fix instance.json."
        : `The catalog folder (connections.catalogDir) cannot be read (${code ?? "error"}).`;
    return { problem: { file: ".", message } };
  }
  const stamps: FileStamp[] = [];
  let changedMs = Number.NEGATIVE_INFINITY;
  let next = 0;
  for (; next < names.length && stamps.length < MAX_CATALOG_FILES; next++) {
    const name = names[next] as string;
    try {
      const info = await statFile(join(dir, name));
      if (!info.isFile()) continue;
      stamps.push({ name, stamp: fileStamp(info), size: info.size });
      changedMs = Math.max(changedMs, lastChangeMs(info));
    } catch {
      // Removed between the listing and the stat: not in the catalog.
    }
  }
  return { stamps, unread: names.length - next, changedMs };
}

async function readAll(dir: string, listing: CatalogListing): Promise<FolderContents> {
  const entries: ParsedEntry[] = [];
  const problems: CatalogProblem[] = [];
  const byId = new Map<string, string>();
  for (const stamp of listing.stamps) {
    const parsed = await readEntryFile(join(dir, stamp.name), stamp.size);
    if ("problem" in parsed) {
      problems.push({ file: stamp.name, message: parsed.problem });
      continue;
    }
    const id = catalogIdOf(parsed.server.name);
    const first = byId.get(id);
    if (first !== undefined) {
      problems.push({
        file: stamp.name,
        message: `Server ${parsed.server.name} is in ${first} already; one file per server.`,
      });
      continue;
    }
    byId.set(id, stamp.name);
    entries.push({ id, file: stamp.name, server: parsed.server });
  }
  // One problem and one log line for all of them, not one per file: 19,000 of those made a 3 MB
  // listing and 19,000 log lines. The count is in the message, so a change to it is logged again.
  if (listing.unread > 0) {
    const files = listing.unread === 1 ? "file" : "files";
    problems.push({
      file: ".",
      message: `${listing.unread} more ${files} not read; the catalog reads at most ${MAX_CATALOG_FILES}, the first by name.`,
    });
  }
  return { entries, problems };
}

/** One server.json file: its entry, or what is wrong with it. */
async function readEntryFile(
  path: string,
  size: number,
): Promise<{ server: ServerJson } | { problem: string }> {
  const read = await readSmallJson(path, size);
  return "problem" in read ? read : checkServerJson(read.value);
}

/** A JSON file no larger than an entry may be, parsed, or what is wrong with it. */
export async function readSmallJson(
  path: string,
  size: number,
): Promise<{ value: unknown } | { problem: string }> {
  if (size > MAX_ENTRY_BYTES)
    return { problem: `Larger than ${MAX_ENTRY_BYTES} bytes; a server.json is smaller.` };
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    return { problem: `Cannot be read (${(error as NodeJS.ErrnoException).code ?? "error"}).` };
  }
  try {
    return { value: JSON.parse(text) };
  } catch (error) {
    return { problem: `Not valid JSON${jsonErrorPlace((error as Error).message)}.` };
  }
}

/**
 * Where a parse failed, without V8's quote of the text around it: a broken file may hold what
 * must not reach a log or a listing (a pasted credential).
 */
function jsonErrorPlace(message: string): string {
  const at = /at position (\d+)(?: \(line (\d+) column (\d+)\))?/.exec(message);
  if (at?.[2] !== undefined) return ` (line ${at[2]}, column ${at[3]})`;
  if (at) return ` (at character ${at[1]})`;
  return message.includes("end of JSON input") ? " (it ends too early)" : "";
}

/**
 * Logs each problem once: a problem still there at the next reread is not logged again, and one
 * that went away and came back is.
 */
export class ProblemLog {
  private seen = new Set<string>();

  report(problems: readonly CatalogProblem[], write: (problem: CatalogProblem) => void): void {
    const now = new Set<string>();
    for (const problem of problems) {
      const key = `${problem.file}\n${problem.message}`;
      now.add(key);
      if (!this.seen.has(key)) write(problem);
    }
    this.seen = now;
  }
}
