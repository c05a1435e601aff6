import { randomBytes } from "node:crypto";
import type { Dirent } from "node:fs";
import { mkdir, rename, rm, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";
import { Conflict, WorkspaceNotFound } from "../errors.ts";
import { isPrincipalId } from "../ids.ts";
import { syncDir, TEMP_PREFIX, WrittenNotFlushed } from "./atomic.ts";
import { exists, FOLDER_MODE, makeFolderIfMissing, namesIn } from "./folders.ts";
import { InvalidPathSegment, type PartitionPaths } from "./paths.ts";
import { type RecoveryPass, sweepTempEntries } from "./recovery.ts";

// Records a workspace keeps per owner, `<ws>/<partition>/<owner>/<id>`, written so that a reader
// and a crash see a whole record or none (adr/0024). Two shapes: a record that is a folder of
// files (a file's content and meta.json, a skill's folder), here, and a record that is one JSON
// file (owned-json-records.ts).

/** A create found a record already at its place: ids are the caller's to choose, never reused. */
export class RecordExists extends Conflict {
  constructor(readonly recordId: string) {
    super("record_exists", "A record with that id exists.");
  }
}

/** What a remove found: the record was there and is gone now, or it was already gone. */
export type Removal = "removed" | "gone";

/**
 * How a write's changes to its parent folder's entries run. A caller whose index watches that
 * folder (a file listing, adr/0050) runs each under the index's lock, so it can tell them from
 * an operator's edit on disk. `commit` runs the one rename that commits a create or a remove,
 * which the index follows; `filled` is what `fill` returned. `step` runs any other: the staging
 * folder made or removed, the record renamed aside removed. Those move the folder's mtime but
 * not the records in it.
 */
export interface FolderChanges<T = void> {
  commit(rename: () => Promise<void>, filled: T): Promise<void>;
  step(change: () => Promise<unknown>): Promise<void>;
}

const UNWATCHED: FolderChanges<unknown> = {
  commit: (rename) => rename(),
  step: async (change) => {
    await change();
  },
};

/**
 * Unwatched changes whose commit asks `check` first, just before the one rename: a `check` that
 * throws refuses the create or remove, which then leaves nothing of itself (a writer's caller
 * whose access ended, adr/0154).
 */
export function checkedBeforeCommit<T>(check: () => void): FolderChanges<T> {
  return {
    commit: (rename) => {
      check();
      return rename();
    },
    step: UNWATCHED.step,
  };
}

/**
 * Creates and removes records that are folders, each in one rename (R3, R4 in storage/recovery.ts).
 * A create is assembled in `.tmp-<id>-<hex>` beside its place; a remove renames the record to
 * `.tmp-deleted-<id>-<hex>` before removing it, so no reader sees half a folder. Both names are
 * unique per write, so a crashed write's leftover never blocks a later one of the same id. While a
 * write runs its temp folder is live: housekeeping's sweep leaves it alone, however old, since
 * an upload over a slow link outlives any age bound (test/unit/storage/recovery.test.ts).
 */
export class RecordFolders {
  private readonly live = new Set<string>();

  /**
   * Makes `<parentDir>/<id>` from what `fill(stagingDir)` writes, refusing (`RecordExists`) when
   * something is at that place, and returns what `fill` returned. Any failure removes the staging
   * folder. The record's rename is flushed in `parentDir` inside `changes.commit`, before an index
   * that follows the commit learns of it: one that cannot be flushed is renamed back and removed
   * with the staging folder, so a failed create never leaves a record that was refused to its
   * caller (adr/0112; test/integration/files-folder-fsync.test.ts).
   */
  async create<T>(
    parentDir: string,
    id: string,
    fill: (stagingDir: string) => Promise<T>,
    changes: FolderChanges<T> = UNWATCHED,
  ): Promise<T> {
    const place = join(parentDir, checkFolderName(id));
    const staging = join(parentDir, `${TEMP_PREFIX}${id}-${randomHex()}`);
    this.live.add(staging);
    try {
      await changes.step(() => mkdir(staging, { mode: FOLDER_MODE }));
      const filled = await fill(staging);
      await changes.commit(async () => {
        // rename(2) refuses a non-empty target but silently replaces an empty folder, so look
        // first. No writer makes an empty record folder, and callers serialise writes per id.
        if (await exists(place)) throw new RecordExists(id);
        try {
          await rename(staging, place);
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code;
          if (code === "ENOTEMPTY" || code === "EEXIST") throw new RecordExists(id);
          throw error;
        }
        try {
          await syncDir(parentDir);
        } catch (error) {
          // Not flushed, so not stored: a power loss could undo the rename after the caller was
          // told. Never retried: a flush that failed once may report success next time without
          // having written anything (Linux reports a writeback error once), so its success would
          // prove nothing. Renamed back for the removal below; if even that fails, removed here.
          await rename(place, staging).catch(() => rm(place, { recursive: true, force: true }));
          throw error;
        }
      }, filled);
      return filled;
    } catch (error) {
      await changes.step(() => rm(staging, { recursive: true, force: true }));
      // A file `fill` wrote whose flush failed landed only in the staging folder, gone now: its
      // caller meets the flush's own error, never one saying the record landed (ADR 0166).
      throw error instanceof WrittenNotFlushed ? error.cause : error;
    } finally {
      this.live.delete(staging);
    }
  }

  /**
   * Removes `<parentDir>/<id>`: renamed aside (the delete takes effect there, and is flushed
   * inside `changes.commit`), then removed. `"gone"` when nothing was there, e.g. a concurrent
   * remove renamed it first; the caller answers its own not-found
   * (test/integration/concurrency.test.ts). A rename aside that cannot be flushed is renamed back,
   * as a create's is, so a failed remove leaves the record in place (adr/0112).
   */
  async remove(parentDir: string, id: string, changes: FolderChanges = UNWATCHED): Promise<Removal> {
    const place = join(parentDir, checkFolderName(id));
    const doomed = join(parentDir, `${TEMP_PREFIX}deleted-${id}-${randomHex()}`);
    this.live.add(doomed);
    try {
      const found = { gone: false };
      await changes.commit(async () => {
        try {
          await rename(place, doomed);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
          found.gone = true;
          return;
        }
        try {
          await syncDir(parentDir);
        } catch (error) {
          // Not flushed, so not done: back in place before the caller is told (see create). A
          // rename back that fails too leaves the record aside, where recovery removes it: the
          // delete then happens after all, answered with the flush's error (adr/0112).
          await rename(doomed, place).catch(() => undefined);
          throw error;
        }
      }, undefined);
      if (found.gone) return "gone";
      await changes.step(() => rm(doomed, { recursive: true, force: true }));
      return "removed";
    } finally {
      this.live.delete(doomed);
    }
  }

  /** Whether `path` is the staging or doomed folder of a write of this process running now. */
  isLive(path: string): boolean {
    return this.live.has(path);
  }

  /** R1, R3 and R4 in one folder of records, sparing live writes; returns the other entries. */
  sweep(parentDir: string, pass: RecoveryPass): Promise<Dirent[]> {
    return sweepTempEntries(parentDir, pass, (path) => this.isLive(path));
  }

  /** `sweep` in every owner folder of a partition (`<ws>/<partition>/`). */
  recoverPartition(partitionDir: string, pass: RecoveryPass): Promise<OwnerEntries[]> {
    return sweepOwnerPartition(partitionDir, pass, (path) => this.isLive(path));
  }
}

/** One owner folder of a partition and the entries recovery kept in it. */
export interface OwnerEntries {
  ownerId: string;
  entries: Dirent[];
}

/**
 * Removes the stale temp entries of a partition folder and of each owner folder in it, sparing
 * those `isLive` names, and returns what each owner folder holds besides. A missing partition
 * has no owners. An app's `LeftoverRules.recoverWorkspace` calls it for its partition.
 */
export async function sweepOwnerPartition(
  partitionDir: string,
  pass: RecoveryPass,
  isLive: (path: string) => boolean = () => false,
): Promise<OwnerEntries[]> {
  const owners: OwnerEntries[] = [];
  for (const owner of await sweepTempEntries(partitionDir, pass)) {
    if (!owner.isDirectory()) continue;
    // Not an owner's (a copy an operator made beside one, `usr_….bak`): neither swept nor read,
    // whose ids a walk would take for a second owner's and whose paths no owner id can name; it
    // ended boot with a stack trace (test/integration/boot.test.ts "a copy of an owner folder").
    if (!isPrincipalId(owner.name)) {
      pass.passedOver.push(join(partitionDir, owner.name));
      continue;
    }
    const entries = await sweepTempEntries(join(partitionDir, owner.name), pass, isLive);
    owners.push({ ownerId: owner.name, entries });
  }
  return owners;
}

/**
 * Makes a folder one level inside an app's partition — an owner's `<ws>/<partition>/<owner>`, or
 * the app's own (`servers`, `audit`, `entries`…) — and the partition folder, inside an existing
 * workspace. Never the workspace: a write to an archived or unknown one is `WorkspaceNotFound`,
 * not a folder brought back (storage/folders.ts).
 */
export async function makeInPartition(ownerDir: string, workspaceId: string): Promise<void> {
  try {
    await makeFolderIfMissing(dirname(ownerDir));
    await makeFolderIfMissing(ownerDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") throw new WorkspaceNotFound(workspaceId);
    throw error;
  }
}

/**
 * What a failed create in an app folder of a workspace (`paths.dir`) answers, once the create
 * removed its staging folder where it made it. A workspace archived while the write ran moved to
 * `_archive/<ws>-<ms>/`, staging folder and all: seen by its app folder being gone, the staging
 * folder is removed where it went, which no recovery pass walks (adr/0024), and an ENOENT the
 * write met there (its meta.json, its rename) is `WorkspaceNotFound`, the 404 any request to an
 * archived workspace gets. A workspace still in place holds nothing of the write: the archive
 * moves the folder whole, so it either moved before the app folder was looked at or after the
 * staging folder was removed (test/unit/platform/files/archived-mid-write.test.ts).
 */
export async function archivedDuringCreate(
  error: unknown,
  paths: Pick<PartitionPaths, "dir" | "archiveDir" | "archivedCopies">,
  workspaceId: string,
  staging: string | undefined,
): Promise<unknown> {
  if (await exists(paths.dir(workspaceId))) return error;
  const copies =
    staging === undefined
      ? []
      : paths.archivedCopies(workspaceId, staging, await namesIn(paths.archiveDir()));
  for (const copy of copies) await rm(copy, { recursive: true, force: true });
  return (error as NodeJS.ErrnoException).code === "ENOENT" ? new WorkspaceNotFound(workspaceId) : error;
}

/**
 * Removes one file (an unlink, flushed in its folder); `"gone"` when it was not there. A flush that
 * fails after the unlink is `WrittenNotFlushed`: the file is gone for every reader (ADR 0166).
 */
export async function removeFileSynced(path: string): Promise<Removal> {
  try {
    await unlink(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return "gone";
    throw error;
  }
  await syncDir(dirname(path)).catch((error: unknown) => {
    throw new WrittenNotFlushed(path, error);
  });
  return "removed";
}

/** A record folder's name is one plain path segment, never a dot-name (those are writers' temp entries). */
function checkFolderName(id: string): string {
  const plain = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/.test(id);
  if (!plain) throw new InvalidPathSegment("record name", id);
  return id;
}

function randomHex(): string {
  return randomBytes(4).toString("hex");
}
