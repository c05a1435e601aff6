import { readdir, rename, rm } from "node:fs/promises";
import type { Logger } from "../log.ts";
import { syncDir } from "./atomic.ts";
import { PURGING_PREFIX, parseArchivedName, type StorageLayout } from "./paths.ts";

/**
 * What an app keeps outside a workspace's folder for it (a connection's sealed credentials in
 * `_instance/credentials/`), removed before the archived folder it is read from (ADR 0113).
 */
export type ArchiveReleaser = (workspaceId: string, archivedName: string) => Promise<void>;

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
  log: Logger;
}

/**
 * Removes each archived workspace whose archive instant (in its folder's name) is more than the
 * retention ago: first what the apps keep for it elsewhere, then the folder, renamed out of
 * `_archive/`'s listing before it is removed. A crash between the two leaves a `.purging-` folder,
 * removed by the next pass; one before the rename leaves the archive whole, and the next pass
 * starts it again (a credential already removed is not there to remove). An archive that fails is
 * logged and left whole; the others go on. A clock stepped back makes an archive younger, never
 * older. Answers how many archives it removed.
 */
export async function purgeExpiredArchives(retention: ArchiveRetention): Promise<number> {
  const { layout, log } = retention;
  const names = await listArchive(layout);
  for (const name of names) {
    const cutShort = name.startsWith(PURGING_PREFIX) ? name.slice(PURGING_PREFIX.length) : undefined;
    if (cutShort !== undefined && parseArchivedName(cutShort)) {
      await rm(layout.purgingFolder(cutShort), { recursive: true, force: true });
    }
  }
  const cutoff = retention.now() - retention.retentionMs;
  // Archives left of each workspace: one archived, restored by copy and archived again has two,
  // whose connections share credentials, so only the last of them releases anything.
  const copies = new Map<string, number>();
  for (const name of names) {
    const workspaceId = parseArchivedName(name)?.workspaceId;
    if (workspaceId) copies.set(workspaceId, (copies.get(workspaceId) ?? 0) + 1);
  }
  let purged = 0;
  // Oldest first: of two archives of one workspace, the newer (restored from the older, then added
  // to) names the most, and is the one left to release what they name.
  const expired = names
    .flatMap((name) => {
      const archived = parseArchivedName(name);
      return archived && archived.archivedAtMs <= cutoff ? [{ name, archived }] : [];
    })
    .sort((a, b) => a.archived.archivedAtMs - b.archived.archivedAtMs);
  // A workspace one of whose archives failed this pass: its newer archives wait for the next, so
  // the one that releases is never removed as "shared" behind a copy that is still there.
  const held = new Set<string>();
  for (const { name, archived } of expired) {
    if (held.has(archived.workspaceId)) continue;
    const { workspaceId } = archived;
    const fields = { workspace: workspaceId, archivedAt: new Date(archived.archivedAtMs).toISOString() };
    const shared = retention.isLive(workspaceId) || (copies.get(workspaceId) ?? 0) > 1;
    try {
      await purge(retention, workspaceId, name, shared);
      copies.set(workspaceId, (copies.get(workspaceId) ?? 1) - 1);
      purged++;
      log.info(
        { ...fields, ...(shared && { released: "nothing: the workspace is live again, or archived again" }) },
        "archived workspace removed: past storage.archiveRetentionDays",
      );
    } catch (error) {
      // One archive that cannot be removed (a file it may not delete) holds back no other
      // workspace's.
      held.add(workspaceId);
      log.warn({ ...fields, err: error }, "archived workspace not removed; tried again next round");
    }
  }
  return purged;
}

/**
 * Releases what the apps keep for one archive, unless another copy of its workspace (live, or
 * archived again) shares it, then removes its folder.
 */
async function purge(retention: ArchiveRetention, workspaceId: string, name: string, shared: boolean) {
  const { layout } = retention;
  if (!shared) {
    for (const release of retention.releasers) await release(workspaceId, name);
  }
  const purging = layout.purgingFolder(name);
  await rename(layout.archivedFolder(name), purging);
  await syncDir(layout.archiveDir());
  await rm(purging, { recursive: true, force: true });
}

async function listArchive(layout: StorageLayout): Promise<string[]> {
  try {
    return await readdir(layout.archiveDir());
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
}
