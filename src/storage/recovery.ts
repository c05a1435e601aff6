import { type Dirent, readdirSync } from "node:fs";
import { lstat, readdir, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { Logger } from "../log.ts";
import { TEMP_PREFIX } from "./atomic.ts";
import { mapBounded } from "./bounded.ts";
import type { StorageLayout } from "./paths.ts";

/*
 * Crash recovery: what an interrupted multi-step write leaves under the root, and what boot
 * and the hourly housekeeping do with each shape. These are all the rules (adr/0024); each
 * primitive implements the ones for its own folders, next to the writer that makes them.
 *
 *  R1  A temp file `.tmp-<name>-<hex>` (storage/atomic.ts) anywhere: its rename never
 *      happened, so the write was never acknowledged. Removed.
 *  R2  A workspace staging folder `<root>/.tmp-ws_…`: the create was never acknowledged.
 *      Removed.
 *  R3  A record's staging folder `.tmp-<id>-<hex>` (a file's `<owner>/.tmp-fl_…`, a new
 *      skill's folder): the create was never acknowledged. Removed. (storage/owned-records.ts)
 *  R4  A half-done delete `.tmp-deleted-…` (files, skills): the record had already left its
 *      place, so the delete had taken effect. Removed. Its name is unique per delete, so a
 *      leftover never collides with a later delete of the same name.
 *  R5  A skill folder with no SKILL.md and nothing in it but temp entries: a create that
 *      never committed. Removed. (platform/skills/skill-recovery.ts)
 *  R6  A skill's history ends with its current SKILL.md, which is the commit point of a save
 *      (it is written first): a current text that is not the newest version is recorded as
 *      the next one; a version `N.md` without `N.json` gets one, saved at the `.md`'s mtime;
 *      an `N.json` without its `N.md` is removed. (platform/skills/skill-recovery.ts)
 *  R7  An audit ledger's day file with a torn line (an append cut short by a crash, or by a disk
 *      that filled during it, the next append's line after it): kept, as
 *      append-only files are never rewritten. Readers skip a line that is not a whole entry and
 *      the next append starts on a new line, so no pass touches it. (platform/connections/audit.ts)
 *  R8  A conversation log whose last line is torn (an append cut short): kept. Readers skip a
 *      line without its newline, and the next append to that log cuts it off before writing,
 *      so no pass touches it. (platform/conversations/log-file.ts, adr/0047)
 *  R9  A skill's history whose skill folder is gone (a delete cut short between removing the
 *      folder and its history, or a folder an operator removed): removed, as the delete does
 *      (adr/0098). During housekeeping only once the history is an hour old, so a folder an
 *      operator is moving has its history when it is back. (platform/skills/skill-recovery.ts)
 *
 * Nothing else under the root is ever half-written: every other write is one atomic rename.
 * A leftover is removed only when no live writer of this process can be using it: at boot
 * none runs yet (and the instance lock keeps other processes out); during housekeeping a
 * record's staging or doomed folder is skipped while its write runs (`RecordFolders.isLive`),
 * and every other temp entry is removed only once older than `HOUSEKEEPING_TEMP_AGE_MS`.
 */

/** A temp entry housekeeping finds younger than this may belong to a write still running. */
export const HOUSEKEEPING_TEMP_AGE_MS = 60 * 60 * 1000;
// Entries directly in `_instance/` wait at least this long even at boot: another process
// starting on the same root may be mid-way through taking the instance lock there.
const INSTANCE_TOP_AGE_MS = 60 * 1000;
const WORKSPACES_IN_FLIGHT = 32;

/** One run of recovery: how old a temp entry must be, and what was done, for the log. */
export class RecoveryPass {
  removed = 0;
  completed = 0;
  /** Folders where an owner's would be whose names are no owner id (an operator's `.bak` copy): left alone. */
  readonly passedOver: string[] = [];

  constructor(
    /** Boot: also rebuild the indexes the walk passes by (the file locator). */
    readonly atBoot: boolean,
    readonly minTempAgeMs: number,
    /** Epoch ms the pass started, from the instance clock: a leftover's age is measured from it. */
    readonly now: number,
  ) {}

  static boot(now: number): RecoveryPass {
    return new RecoveryPass(true, 0, now);
  }

  static housekeeping(now: number): RecoveryPass {
    return new RecoveryPass(false, HOUSEKEEPING_TEMP_AGE_MS, now);
  }

  /** Whether a leftover at `path` is old enough to be nobody's write in progress. */
  async isStale(path: string, minAgeMs = this.minTempAgeMs): Promise<boolean> {
    if (minAgeMs <= 0) return true;
    try {
      return this.now - (await lstat(path)).mtimeMs >= minAgeMs;
    } catch {
      return false;
    }
  }

  /**
   * A folder's entries. At boot synchronously: nothing else is served yet, and a listing costs
   * about half as much without the thread pool's round trip (the walk reads every workspace
   * folder: adr/0025). Hourly, while requests are served, through the thread pool.
   */
  async list(dir: string): Promise<Dirent[]> {
    return this.atBoot ? readdirSync(dir, { withFileTypes: true }) : readdir(dir, { withFileTypes: true });
  }

  async remove(path: string): Promise<void> {
    await rm(path, { recursive: true, force: true });
    this.removed += 1;
  }
}

/** What one primitive recovers inside a workspace and instance-wide. */
export interface LeftoverRules {
  /**
   * `present` names what the workspace folder holds (temp entries already swept), so a rule
   * whose folder is absent costs nothing: boot walks every workspace.
   */
  recoverWorkspace?(workspaceId: string, present: ReadonlySet<string>, pass: RecoveryPass): Promise<void>;
  recoverInstance?(pass: RecoveryPass): Promise<void>;
}

/**
 * Removes the stale temp entries (R1–R4) of one folder and returns the other entries, so a
 * rule that walks on does not read the folder twice. A missing folder has no entries.
 */
export async function sweepTempEntries(
  dir: string,
  pass: RecoveryPass,
  isLive: (path: string) => boolean = () => false,
  minAgeMs = pass.minTempAgeMs,
): Promise<Dirent[]> {
  let entries: Dirent[];
  try {
    entries = await pass.list(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
  const kept: Dirent[] = [];
  for (const entry of entries) {
    if (!entry.name.startsWith(TEMP_PREFIX)) {
      kept.push(entry);
      continue;
    }
    const path = join(dir, entry.name);
    if (!isLive(path) && (await pass.isStale(path, minAgeMs))) await pass.remove(path);
  }
  return kept;
}

/** R1 under `_instance/`, except in user skills, which their own rules walk (R4–R6). */
async function sweepInstance(layout: StorageLayout, pass: RecoveryPass): Promise<void> {
  const top = layout.instanceDir();
  const users = layout.usersDir();
  const walk = async (dir: string, minAgeMs: number): Promise<void> => {
    for (const entry of await sweepTempEntries(dir, pass, undefined, minAgeMs)) {
      const path = join(dir, entry.name);
      const userSkills = dirname(dir) === users && entry.name === "skills";
      if (entry.isDirectory() && !userSkills) await walk(path, pass.minTempAgeMs);
    }
  };
  await walk(top, Math.max(pass.minTempAgeMs, INSTANCE_TOP_AGE_MS));
}

/**
 * Applies every rule to the whole root: the root itself, each live workspace (a bounded
 * number at once) and `_instance/`. Archived workspaces are not walked: nothing reads them, and a
 * file's create the archive cut short removes its own staging folder there (owned-records.ts,
 * archivedDuringCreate); a crash in that window leaves it for whoever deletes or restores the
 * archive (restored, it is a live workspace's leftover, R3).
 */
export async function recoverDataRoot(
  layout: StorageLayout,
  workspaceIds: readonly string[],
  rules: readonly LeftoverRules[],
  pass: RecoveryPass,
  log: Logger,
): Promise<RecoveryPass> {
  await sweepTempEntries(layout.root, pass);
  await mapBounded(workspaceIds, WORKSPACES_IN_FLIGHT, async (id) => {
    // R1 for workspace.json writes; the rest is each primitive's.
    const present = new Set((await sweepTempEntries(layout.workspaceDir(id), pass)).map((e) => e.name));
    for (const rule of rules) await rule.recoverWorkspace?.(id, present, pass);
  });
  await sweepInstance(layout, pass);
  for (const rule of rules) await rule.recoverInstance?.(pass);
  if (pass.removed + pass.completed > 0) {
    log.info(
      { removed: pass.removed, completed: pass.completed, atBoot: pass.atBoot },
      "recovered what interrupted writes left",
    );
  }
  // Said at boot, not every hour: what an operator put there stays until they move it.
  if (pass.atBoot && pass.passedOver.length > 0) {
    log.warn(
      { folders: pass.passedOver },
      "folders named like no owner id sit among owners' folders; Atrium leaves them alone and serves nothing from them: move them out of the data root",
    );
  }
  return pass;
}
