import type { Dirent, Stats } from "node:fs";
import { lstat, readdir, realpath, rename, rm } from "node:fs/promises";
import { BootError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { syncDir } from "./atomic.ts";
import { isReachedThroughLink, type PinnedFolder, pinFolder } from "./no-follow.ts";
import { PURGING_PREFIX, parseArchivedName, type StorageLayout } from "./paths.ts";

/**
 * What an app keeps outside a workspace's folder for it (a connection's sealed credentials in
 * `_instance/credentials/`), removed before the archived folder it is read from (ADR 0113).
 * `archive`: `_archive/` as the purge pinned it, to read below (NoFollowReader), so the folder the
 * purge then removes is the one read. Answers what it left alone below the archive and why,
 * `<path>: <why>` (a link it never follows, a record that is not the workspace's: ADR 0142),
 * reported with the removal; the folder goes, unless a note says a file was reached through a
 * folder swapped for a link meanwhile (ADR 0145).
 */
export type ArchiveReleaser = (
  workspaceId: string,
  archivedName: string,
  archive: PinnedFolder,
) => Promise<readonly string[]>;

export interface ArchiveRetention {
  layout: StorageLayout;
  /** How long an archived workspace is kept: `storage.archiveRetentionDays`. */
  retentionMs: number;
  now: () => number;
  /**
   * Whether a workspace with this id is served: one restored by copying its archived folder back
   * shares the copy's credentials, which must then outlive the copy.
   */
  isLive: (workspaceId: string) => boolean;
  releasers: readonly ArchiveReleaser[];
  /** Why an archive goes, for its log line: the setting or the command that asked. */
  cause: string;
  log: Logger;
  /**
   * Asked before each archive (and each `.purging-` folder) is touched; false stops the purge
   * there, with what it had not reached left as it is (`PurgeReport.stopped`). `atrium archive
   * purge` asks whether it still holds the root's lock (ADR 0146).
   */
  mayWrite?: () => Promise<boolean>;
}

/** One archived workspace, as `_archive/` lists it. */
export interface ArchivedEntry {
  /** The folder's name in `_archive/`: `ws_<16 hex>-<ms>`. */
  name: string;
  workspaceId: string;
  archivedAtMs: number;
}

/** What `_archive/` holds past a cutoff. */
export interface ArchiveListing {
  /** Archived workspace folders archived at or before the cutoff, oldest first. */
  expired: ArchivedEntry[];
  /**
   * Entries in `_archive/` named like an archive or its `.purging-` folder that are not a folder
   * (a symlink, a file), by name: never one Atrium made, so never followed or removed (ADR 0142).
   */
  notFolders: string[];
  /** The archives whose `.purging-` folder a removal cut short left, finished by the next purge. */
  cutShort: string[];
}

/** One archive a purge removed. */
export interface RemovedArchive extends ArchivedEntry {
  /** Set when nothing was released for it: the other copy of its workspace that uses what it names. */
  sharedWith?: "the live workspace" | "another archive";
  /** What its releasers left alone below it, `<path>: <why>` (ArchiveReleaser). */
  leftAlone: readonly string[];
}

/** What a purge did. */
export interface PurgeReport extends ArchiveListing {
  removed: RemovedArchive[];
  failed: Array<{ entry: ArchivedEntry; error: unknown }>;
  /** The archives whose `.purging-` folder could not be removed this pass either (`cutShort`). */
  unfinished: Array<{ name: string; error: unknown }>;
  /** Set when `mayWrite` stopped the purge: what it had not reached, left as it is. */
  stopped?: { expired: ArchivedEntry[]; cutShort: string[] };
}

/**
 * The archived workspaces archived at or before `cutoffMs` (by the instant in their folder's name),
 * oldest first, and what else named like one `_archive/` holds. Reads names and entry types only:
 * nothing is opened, so it is safe beside a running server (`atrium archive purge --dry-run`).
 */
export async function listExpiredArchives(layout: StorageLayout, cutoffMs: number): Promise<ArchiveListing> {
  return (await scanArchive(layout, cutoffMs)).listing;
}

/** The listing, and how many archived folders each workspace has there (expired or not). */
async function scanArchive(
  layout: StorageLayout,
  cutoffMs: number,
): Promise<{ listing: ArchiveListing; copies: Map<string, number> }> {
  const listing: ArchiveListing = { expired: [], notFolders: [], cutShort: [] };
  const copies = new Map<string, number>();
  for (const entry of await listArchive(layout)) {
    const cutShortName = entry.name.startsWith(PURGING_PREFIX)
      ? entry.name.slice(PURGING_PREFIX.length)
      : undefined;
    const archived = parseArchivedName(cutShortName ?? entry.name);
    if (!archived) continue;
    if (!entry.isDirectory()) {
      listing.notFolders.push(entry.name);
      continue;
    }
    if (cutShortName !== undefined) {
      listing.cutShort.push(cutShortName);
      continue;
    }
    copies.set(archived.workspaceId, (copies.get(archived.workspaceId) ?? 0) + 1);
    if (archived.archivedAtMs <= cutoffMs) listing.expired.push({ name: entry.name, ...archived });
  }
  // Oldest first: of two archives of one workspace, the newer (restored from the older, then added
  // to) names the most, and is the one left to release what they name.
  listing.expired.sort((a, b) => a.archivedAtMs - b.archivedAtMs);
  listing.notFolders.sort();
  listing.cutShort.sort();
  return { listing, copies };
}

/**
 * Removes each archived workspace whose archive instant (in its folder's name) is more than the
 * retention ago: first what the apps keep for it elsewhere, then the folder, renamed out of
 * `_archive/`'s listing before it is removed. A crash between the two leaves a `.purging-` folder,
 * removed by the next pass; one before the rename leaves the archive whole, and the next pass
 * starts it again (a credential already removed is not there to remove). An archive that fails is
 * logged and left whole; the others go on. A clock stepped back makes an archive younger, never
 * older. Only real folders directly in `_archive/` are touched: an entry that is a symlink is
 * never followed, and `fs.rm` removes a link inside an archive, never what it points to; right
 * before each rename and removal, `_archive/` and the folder are checked to be real folders still,
 * `_archive/` the one the releases read below (ADR 0145). A `.purging-` folder that cannot be
 * removed either is reported and logged, and holds back nothing.
 */
export async function purgeExpiredArchives(retention: ArchiveRetention): Promise<PurgeReport> {
  const { layout, log } = retention;
  // `copies`: archives left of each workspace. One archived, restored by copy and archived again
  // has two, whose connections share credentials, so only the last of them releases anything.
  const { listing, copies } = await scanArchive(layout, retention.now() - retention.retentionMs);
  const report: PurgeReport = { ...listing, removed: [], failed: [], unfinished: [] };
  if (listing.cutShort.length === 0 && listing.expired.length === 0) return report;
  // Pinned once, `_archive/` having just been lstat'ed a real folder: each removal checks it is
  // still that folder first (refuseUnlessInPlace), and each release reads below it.
  const archive = await pinFolder(layout.archiveDir());
  const mayWrite = retention.mayWrite ?? (async () => true);
  for (const [index, name] of listing.cutShort.entries()) {
    if (!(await mayWrite())) {
      report.stopped = { expired: listing.expired, cutShort: listing.cutShort.slice(index) };
      return report;
    }
    try {
      const purging = layout.purgingFolder(name);
      await refuseUnlessInPlace(archive, purging);
      await rm(purging, { recursive: true, force: true });
    } catch (error) {
      report.unfinished.push({ name, error });
      log.warn(
        { folder: name, err: error },
        "archived workspace's removal not finished; tried again next round",
      );
    }
  }
  // A workspace one of whose archives failed this pass: its newer archives wait for the next, so
  // the one that releases is never removed as "shared" behind a copy that is still there.
  const held = new Set<string>();
  for (const [index, entry] of listing.expired.entries()) {
    const { workspaceId } = entry;
    if (held.has(workspaceId)) continue;
    if (!(await mayWrite())) {
      report.stopped = { expired: listing.expired.slice(index), cutShort: [] };
      return report;
    }
    const fields = { workspace: workspaceId, archivedAt: new Date(entry.archivedAtMs).toISOString() };
    const sharedWith = retention.isLive(workspaceId)
      ? "the live workspace"
      : (copies.get(workspaceId) ?? 0) > 1
        ? "another archive"
        : undefined;
    try {
      const leftAlone = await purge(retention, archive, entry, sharedWith === undefined);
      copies.set(workspaceId, (copies.get(workspaceId) ?? 1) - 1);
      report.removed.push({ ...entry, ...(sharedWith && { sharedWith }), leftAlone });
      log.info(
        { ...fields, ...(sharedWith && { released: `nothing: shared with ${sharedWith}` }) },
        `archived workspace removed: ${retention.cause}`,
      );
      if (leftAlone.length > 0) {
        log.warn(
          { ...fields, leftAlone },
          "archived workspace removed; what it named there was not released",
        );
      }
    } catch (error) {
      // One archive that cannot be removed (a file it may not delete) holds back no other
      // workspace's.
      held.add(workspaceId);
      report.failed.push({ entry, error });
      log.warn({ ...fields, err: error }, "archived workspace not removed; tried again next round");
    }
  }
  return report;
}

/**
 * Releases what the apps keep for one archive, when `release` (no other copy of its workspace,
 * live or archived again, shares it), then removes its folder. Answers what the releasers left
 * alone. Throws, the archive kept for the next round, when a releaser read a file through a folder
 * swapped for a link meanwhile (what the archive names may not all be released), or `_archive/`
 * or the archive is no longer the real folder the releasers read below (ADR 0145).
 */
async function purge(
  retention: ArchiveRetention,
  archive: PinnedFolder,
  { workspaceId, name }: ArchivedEntry,
  release: boolean,
): Promise<string[]> {
  const { layout } = retention;
  const leftAlone: string[] = [];
  if (release) {
    for (const releaser of retention.releasers)
      leftAlone.push(...(await releaser(workspaceId, name, archive)));
  }
  const swapped = leftAlone.filter(isReachedThroughLink);
  if (swapped.length > 0) {
    throw new Error(
      `a folder in it was swapped (for a symbolic link or a file) while it was released (${swapped.join("; ")}): ` +
        "kept, what it names may not all be released; released again next round",
    );
  }
  const purging = layout.purgingFolder(name);
  await refuseUnlessInPlace(archive, layout.archivedFolder(name));
  await rename(layout.archivedFolder(name), purging);
  await syncDir(layout.archiveDir());
  await refuseUnlessInPlace(archive, purging);
  await rm(purging, { recursive: true, force: true });
  return leftAlone;
}

/**
 * Throws unless `_archive/` is still the real folder pinned as `archive` and `folder`, directly in
 * it, a real folder (or gone), asked right before `folder` is renamed or removed. Node has no
 * renameat or unlinkat: both act by path, so either swapped for a link since (during a release)
 * would have them rename and remove a folder of the same name wherever the link points, outside
 * the data root. What is left is the instant between this check and the call (ADR 0145).
 */
async function refuseUnlessInPlace(archive: PinnedFolder, folder: string): Promise<void> {
  const why = await whyNotInPlace(archive, folder);
  if (why === undefined) return;
  throw new Error(
    `${why}, where the purge found real folders: nothing is renamed or removed through it, as Atrium ` +
      "removes archived workspaces only from the data root's own _archive folder. Put the real folder back in its place.",
  );
}

async function whyNotInPlace(archive: PinnedFolder, folder: string): Promise<string | undefined> {
  const top = await lstat(archive.path).catch(missingAsUndefined);
  if (top?.isDirectory() !== true) return `${archive.path} is now ${kindOf(top)}`;
  if ((await realpath(archive.path)) !== archive.real) {
    return `${archive.path} is now another folder than ${archive.real}`;
  }
  const held = await lstat(folder).catch(missingAsUndefined);
  return held === undefined || held.isDirectory() ? undefined : `${folder} is now ${kindOf(held)}`;
}

function kindOf(info: Stats | undefined): string {
  if (info === undefined) return "gone";
  return info.isSymbolicLink() ? "a symbolic link" : "no folder";
}

function missingAsUndefined(error: unknown): undefined {
  if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
  throw error;
}

/**
 * `_archive/`'s entries, with their types as the directory gives them (a symlink is a symlink,
 * never what it points to). `_archive` itself must be a real folder: were it a link, what is
 * removed would live outside the data root.
 */
async function listArchive(layout: StorageLayout): Promise<Dirent[]> {
  const dir = layout.archiveDir();
  try {
    if (!(await lstat(dir)).isDirectory()) {
      throw new BootError(
        `${dir} is not a folder (a symbolic link or a file): Atrium removes archived workspaces only ` +
          "from the data root's own _archive folder. Replace it with the folder it stands for.",
      );
    }
    return await readdir(dir, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
}
