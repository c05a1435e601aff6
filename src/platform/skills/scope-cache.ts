import { type Dirent, lstatSync, readdirSync, type Stats, statSync } from "node:fs";
import { join } from "node:path";
import { type Clock, isWithin } from "../../kernel/clock.ts";
import type { Timers } from "../../kernel/timers.ts";
import { isRacy } from "../../storage/file-stamp.ts";
import type { Provenance, Skill, SkillProblem, SkillScope } from "./model.ts";
import { readSkillDir, SkillFileCache } from "./skill-dirs.ts";
import { SKILL_FILE } from "./skill-file.ts";

export interface ScopeListing {
  skills: Skill[];
  problems: SkillProblem[];
}

/**
 * One stamped path: its modification and change times, and a SKILL.md's size (-1: missing). The
 * change time also moves when a copy that keeps its source's modification time lands (`cp -p`,
 * `rsync -t`). A path whose stat failed otherwise than by being missing (a symlink loop, no
 * permission, a disk error) is stamped with that error's code: unreadable, which the read reports
 * as a problem.
 */
interface Stamp {
  path: string;
  mtimeMs: number;
  ctimeMs: number;
  size?: number;
  unreadable?: string;
}

interface Entry {
  listing: ScopeListing;
  stamps: Stamp[];
  /** What the listing and its stamps hold, as heldBytesOf counts it. */
  bytes: number;
  /** A stamp this close to the read may hide a change made within the same clock tick. */
  racy: boolean;
  /** The event-loop turn in which the stamps were last found unchanged. */
  checkedInTurn: number;
  /** When it was last read, by the instance's clock: what the idle sweep goes by. */
  usedAt: number;
}

/**
 * How long a scope folder's listing is kept unused, as a workspace's sources are (IDLE_EVICT_MS
 * in src/server.ts): past it, an idle workspace's and person's listings, their parsed files and
 * the resolutions built on them go, so an instance with many idle workspaces pays disk, not memory.
 */
export const SKILL_LISTING_IDLE_MS = 10 * 60 * 1000;

/** The instance's clock and timers the idle sweep goes by; without them, listings go only by the budgets. */
export interface IdleSweep {
  clock: Clock;
  timers: Timers;
  idleMs?: number;
}

/** Scope folders kept; each costs a few hundred bytes per skill. The oldest used goes first. */
const MAX_ENTRIES = 2_000;

/**
 * The most the kept listings may hold, as heldBytesOf counts it; the oldest used goes first, the
 * newest always stays. A listing holds no body (adr/0098), but a skill's settings may still be
 * some 15 KB (a 1,024-character description, 64 tool patterns), and one person may fill 500 of
 * them in each of 1,000 workspaces: without a budget, 2,000 kept folders could hold gigabytes.
 */
export const MAX_HELD_BYTES = 64 * 1024 * 1024;

/**
 * What each scope folder lists, kept between requests (adr/0051). Before use an entry is checked
 * against its stamps: the scope folder's, each skill folder's (and every folder beneath it) and
 * each SKILL.md's modification time. A skill added, removed, renamed or edited on disk, a bundled
 * file added or removed, changes one of them, so an operator's edit shows on the next request
 * read after it, as when every request listed the folders. The check is a synchronous `stat` per
 * stamp: those paths are in the kernel's cache, and one costs microseconds where an asynchronous
 * one costs a trip through the thread pool. An entry is checked once per event-loop turn: requests served in the
 * same turn arrived together and share the check (adr/0061), and the next turn checks again.
 * Writes through Atrium also drop the entries (`forget`).
 */
export class ScopeCache {
  private readonly entries = new Map<string, Entry>();
  /** Reads of a folder under way: requests that find its entry missing or stale share one. */
  private readonly reading = new Map<string, Promise<ScopeListing>>();
  private turn = 0;
  private turnEnding = false;
  private held = 0;
  private readonly kept = new Set<ScopeListing>();
  /** The armed sweep's cancel; armed only while something is kept. */
  private cancelSweep: (() => void) | undefined;
  private stopped = false;

  /**
   * `now` is the file system's time, which the racy check compares stamps with, whatever the
   * instance's clock; `idle`'s clock is the instance's. `dropped` hears of each listing the cache
   * lets go (evicted, idle, read again, forgotten), so what was built from it (a caller's
   * resolution: service.ts) does not hold it on.
   */
  constructor(
    private readonly files = new SkillFileCache(),
    private readonly now: () => number = Date.now,
    private readonly dropped: (listing: ScopeListing) => void = () => {},
    private readonly maxHeldBytes = MAX_HELD_BYTES,
    private readonly idle?: IdleSweep,
  ) {}

  /** What the kept listings hold, as heldBytesOf counts it; never more than the budget but for the newest. */
  get heldBytes(): number {
    return this.held;
  }

  /** Whether `listing` is still kept: one let go before its reader built on it is heard of no more. */
  keeps(listing: ScopeListing): boolean {
    return this.kept.has(listing);
  }

  async read(dir: string, scope: SkillScope, provenance?: Provenance): Promise<ScopeListing> {
    const key = `${scope}\0${provenance ?? ""}\0${dir}`;
    const cached = this.entries.get(key);
    if (cached && !cached.racy && this.stillTrue(cached)) {
      // Most recently used last, so eviction takes the longest unused.
      this.entries.delete(key);
      this.entries.set(key, cached);
      cached.usedAt = this.idle?.clock() ?? 0;
      return cached.listing;
    }
    const under = this.reading.get(key);
    if (under) return under;
    const read: Promise<ScopeListing> = this.readAnew(key, dir, scope, provenance).finally(() => {
      if (this.reading.get(key) === read) this.reading.delete(key);
    });
    this.reading.set(key, read);
    return read;
  }

  private async readAnew(
    key: string,
    dir: string,
    scope: SkillScope,
    provenance: Provenance | undefined,
  ): Promise<ScopeListing> {
    // Stamped before reading: a change made during the read shows in the next check.
    const stamps = stampsOf(dir);
    const listing = await readSkillDir(dir, scope, provenance, this.files);
    const newest = Math.max(...stamps.map((s) => s.mtimeMs));
    this.drop(key);
    const bytes = heldBytesOf(listing, stamps);
    const racy = isRacy(newest, this.now());
    const usedAt = this.idle?.clock() ?? 0;
    this.entries.set(key, { listing, stamps, bytes, racy, checkedInTurn: -1, usedAt });
    this.held += bytes;
    this.kept.add(listing);
    this.armSweep();
    while (this.entries.size > MAX_ENTRIES || (this.held > this.maxHeldBytes && this.entries.size > 1))
      this.letGo(this.entries.keys().next().value as string);
    return listing;
  }

  /**
   * Lets go of the listings unused for the idle time, least recently used first; also run on the
   * instance's timers while any is kept (test/unit/platform/skills/scope-cache.test.ts "lets an idle listing go").
   */
  sweep(now = this.idle?.clock()): void {
    if (!this.idle || now === undefined) return;
    const idleMs = this.idle.idleMs ?? SKILL_LISTING_IDLE_MS;
    for (const [key, entry] of [...this.entries]) if (!isWithin(now, entry.usedAt, idleMs)) this.letGo(key);
  }

  /** A graceful stop: the idle timer ends. */
  stop(): void {
    this.stopped = true;
    this.cancelSweep?.();
    this.cancelSweep = undefined;
  }

  private armSweep(): void {
    if (!this.idle || this.stopped || this.cancelSweep) return;
    const idleMs = this.idle.idleMs ?? SKILL_LISTING_IDLE_MS;
    this.cancelSweep = this.idle.timers.after(Math.max(1_000, Math.floor(idleMs / 2)), () => {
      this.cancelSweep = undefined;
      this.sweep();
      if (this.entries.size > 0) this.armSweep();
    });
  }

  /** Drops the entry and its parsed files (adr/0098): the key ends with the folder. */
  private letGo(key: string): void {
    this.drop(key);
    this.files.forget(key.slice(key.lastIndexOf("\0") + 1));
  }

  private drop(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.held -= entry.bytes;
    this.kept.delete(entry.listing);
    this.dropped(entry.listing);
  }

  private stillTrue(entry: Entry): boolean {
    if (entry.checkedInTurn === this.turn) return true;
    if (!entry.stamps.every(unchanged)) return false;
    entry.checkedInTurn = this.turn;
    if (!this.turnEnding) {
      this.turnEnding = true;
      // setImmediate runs once this turn's I/O callbacks, and the requests they began, are done.
      setImmediate(() => {
        this.turn += 1;
        this.turnEnding = false;
      }).unref();
    }
    return true;
  }

  /** Drops the entries of folder `dir`: a write through Atrium does not wait for a stamp to move. */
  forget(dir: string): void {
    for (const key of [...this.entries.keys()]) if (key.endsWith(`\0${dir}`)) this.drop(key);
    // A read begun before the write is not joined by requests after it.
    for (const key of this.reading.keys()) if (key.endsWith(`\0${dir}`)) this.reading.delete(key);
  }
}

/**
 * What a listing and its stamps hold, counted high: two bytes a character (V8 keeps ASCII in
 * one) and a few hundred for each object, since the parsed-file cache keeps a copy of each skill.
 */
function heldBytesOf(listing: ScopeListing, stamps: readonly Stamp[]): number {
  const text = (...parts: readonly string[]) => parts.reduce((sum, part) => sum + 2 * part.length, 0);
  let bytes = 0;
  for (const skill of listing.skills) {
    bytes +=
      400 + text(skill.name, skill.description, skill.dir ?? "", ...skill.tools, ...(skill.files ?? []));
    bytes += text(skill.body ?? "");
  }
  for (const problem of listing.problems) bytes += 100 + text(problem.name, problem.message);
  for (const stamp of stamps) bytes += 100 + text(stamp.path, stamp.unreadable ?? "");
  return bytes;
}

function unchanged(stamp: Stamp): boolean {
  // A SKILL.md's stamp (the one with a size) is its link's, as stampsOf took it.
  const info = statOrError(stamp.path, stamp.size === undefined ? statSync : lstatSync);
  // Unreadable now: unchanged only if it was unreadable the same way when stamped, so a listing
  // that reports a looping SKILL.md is kept, not read again on every request; any other error
  // reads the folder again, and that read reports what it meets.
  if (typeof info === "string") return info === stamp.unreadable;
  if (stamp.unreadable !== undefined) return false;
  if ((info?.mtimeMs ?? -1) !== stamp.mtimeMs || (info?.ctimeMs ?? -1) !== stamp.ctimeMs) return false;
  return stamp.size === undefined || (info?.size ?? -1) === stamp.size;
}

function stampOf(path: string, info: Stats | string | undefined, withSize: boolean): Stamp {
  if (typeof info === "string") {
    return withSize
      ? { path, mtimeMs: -1, ctimeMs: -1, size: -1, unreadable: info }
      : { path, mtimeMs: -1, ctimeMs: -1, unreadable: info };
  }
  const times = { mtimeMs: info?.mtimeMs ?? -1, ctimeMs: info?.ctimeMs ?? -1 };
  return withSize ? { path, ...times, size: info?.size ?? -1 } : { path, ...times };
}

/**
 * The scope folder, every folder under it, and each skill's SKILL.md (missing and unreadable ones
 * too). Never throws: one operator's looping or unreadable file made every workspace's
 * `initialize` fail when it did (test/unit/platform/skills/scope-cache.test.ts "unreadable").
 */
function stampsOf(dir: string): Stamp[] {
  const stamps: Stamp[] = [];
  const folder = (path: string, depth: number): void => {
    const info = statOrError(path);
    const isFolder = typeof info === "object" && info.isDirectory();
    stamps.push(stampOf(path, isFolder || typeof info === "string" ? info : undefined, false));
    if (!isFolder) return;
    if (depth === 1) {
      // The link itself, as the read takes it (adr/0139): a linked SKILL.md is a problem whatever
      // its target, and what replaces the link moves the link's stamp.
      const skillFile = join(path, SKILL_FILE);
      stamps.push(stampOf(skillFile, statOrError(skillFile, lstatSync), true));
    }
    for (const entry of listing(path)) {
      if (!entry.name.startsWith(".") && entry.isDirectory()) folder(join(path, entry.name), depth + 1);
    }
  };
  folder(dir, 0);
  return stamps;
}

/**
 * The path's stat; undefined when nothing is there; the error's code when a stat fails otherwise.
 * `throwIfNoEntry: false` spares only ENOENT: ELOOP, EACCES, EIO and ENOTDIR still throw.
 */
function statOrError(path: string, statOf = statSync): Stats | string | undefined {
  try {
    return statOf(path, { throwIfNoEntry: false });
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? "EUNKNOWN";
  }
}

function listing(path: string): Dirent[] {
  try {
    return readdirSync(path, { withFileTypes: true });
  } catch {
    return [];
  }
}
