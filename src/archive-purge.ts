import { readdir } from "node:fs/promises";
import type { CliOutput } from "./cli.ts";
import { BootError } from "./errors.ts";
import { isWorkspaceId } from "./ids.ts";
import { type CommandLock, lockLostSentence } from "./instance/lock.ts";
import type { InstanceConfig } from "./instance/schema.ts";
import type { Clock } from "./kernel/clock.ts";
import { createLogger } from "./log.ts";
import type { PlatformApp } from "./platform/app.ts";
import { archiveReleasers } from "./platform/kit.ts";
import {
  type ArchivedEntry,
  type ArchiveListing,
  listExpiredArchives,
  purgeExpiredArchives,
} from "./storage/archive-retention.ts";
import { CredentialStore } from "./storage/credential-store.ts";
import { isFolder } from "./storage/folders.ts";
import { PURGING_PREFIX, StorageLayout } from "./storage/paths.ts";

const DAY_MS = 24 * 60 * 60 * 1000;

/** What `atrium archive purge` was asked, its flags checked. */
export interface ArchivePurge {
  config: InstanceConfig;
  olderThanDays: number;
  dryRun: boolean;
  apps: readonly PlatformApp[];
  clock: Clock;
  /** Takes the root's lock as `serve` does (src/instance/lock.ts). */
  lockRoot(layout: StorageLayout): Promise<CommandLock>;
}

/**
 * `atrium archive purge` (ADR 0142): removes each archived workspace archived more than
 * `olderThanDays` ago, exactly as `storage.archiveRetentionDays` does in housekeeping (what apps
 * keep for it first, then its folder), and prints each. With the root's lock held, so never beside
 * a running server: a removal releases sealed credentials and schedule entries that a server holds
 * too. `dryRun` only lists, reading names and entry types, and takes no lock, so it is safe beside
 * one. Answers the exit code: 1 when an archive, or what a removal cut short left, could not be
 * removed, or when the lock stopped being this process's part way (ADR 0146): the archive being
 * removed then is finished, and none after it is touched.
 */
export async function purgeArchive(request: ArchivePurge, output: CliOutput): Promise<number> {
  const { config, olderThanDays, dryRun } = request;
  const layout = new StorageLayout(config.storage.root);
  const age = `archived more than ${olderThanDays} day(s) ago`;
  if (dryRun) {
    // The lock's own check, for a command that takes none: a mistyped --data lists nothing.
    if (!(await isFolder(layout.instanceDir()))) {
      throw new BootError(
        `${layout.root} is not a data root Atrium has run on (it has no _instance/ folder): check ` +
          "--data, or storage.root in the instance file.",
      );
    }
    const listing = await listExpiredArchives(layout, request.clock() - olderThanDays * DAY_MS);
    for (const entry of listing.expired) output.out(`would remove  ${describe(layout, entry)}\n`);
    for (const name of listing.cutShort) output.out(`would finish  ${layout.purgingFolder(name)}\n`);
    reportLeftAlone(layout, listing, output);
    output.out(
      `Dry run: ${listing.expired.length} archived workspace(s) ${age} would be removed; nothing was removed.\n`,
    );
    return 0;
  }
  const lock = await request.lockRoot(layout);
  try {
    const credentials = await CredentialStore.open(layout, config.credentials);
    const live = new Set((await readdir(layout.root)).filter(isWorkspaceId));
    const report = await purgeExpiredArchives({
      layout,
      retentionMs: olderThanDays * DAY_MS,
      now: request.clock,
      // A workspace restored by copying its archive back shares what the archive names: a folder
      // of that id at the root, however it got there, keeps it (ADR 0113).
      isLive: (workspaceId) => live.has(workspaceId),
      releasers: archiveReleasers(request.apps, { layout, credentials }),
      cause: `${age} (atrium archive purge)`,
      // What it did is printed below, line by line; the JSON log would say it twice.
      log: createLogger("silent"),
      // Read from the lock file before each archive, not at the last heartbeat: a root taken over
      // meanwhile loses no further archive to this process (test/integration/archive-purge-cli.test.ts).
      mayWrite: () => lock.stillHeld(),
    });
    for (const entry of report.removed) {
      const shared = entry.sharedWith && `; released nothing: shared with ${entry.sharedWith}`;
      output.out(`removed       ${describe(layout, entry)}${shared ?? ""}\n`);
      for (const note of entry.leftAlone) output.out(`left alone    ${note}\n`);
    }
    for (const { entry, error } of report.failed) {
      output.err(`not removed   ${describe(layout, entry)}: ${(error as Error).message}\n`);
    }
    for (const { name, error } of report.unfinished) {
      output.err(`not finished  ${layout.purgingFolder(name)}: ${(error as Error).message}\n`);
    }
    reportLeftAlone(layout, report, output);
    const failed = report.failed.length + report.unfinished.length;
    if (report.stopped) {
      for (const entry of report.stopped.expired) output.err(`not reached   ${describe(layout, entry)}\n`);
      for (const name of report.stopped.cutShort) output.err(`not reached   ${layout.purgingFolder(name)}\n`);
      output.err(
        `atrium: ${lockLostSentence(layout.instanceLockFile())}. Removed ${report.removed.length} archived ` +
          `workspace(s) ${age}; those not reached (above) are left as they are` +
          (failed > 0 ? `, and ${failed} could not be removed (above)` : "") +
          ". Stop the process that holds the root now (the lock names it), then run the purge again.\n",
      );
      return 1;
    }
    output.out(
      `Removed ${report.removed.length} archived workspace(s) ${age}` +
        (failed > 0 ? `; ${failed} could not be removed (above).\n` : ".\n"),
    );
    return failed > 0 ? 1 : 0;
  } finally {
    await lock.release();
  }
}

function describe(layout: StorageLayout, entry: ArchivedEntry): string {
  return `${layout.archivedFolder(entry.name)} (workspace ${entry.workspaceId}, archived ${new Date(entry.archivedAtMs).toISOString()})`;
}

function reportLeftAlone(layout: StorageLayout, listing: ArchiveListing, output: CliOutput): void {
  for (const name of listing.notFolders) {
    const path = name.startsWith(PURGING_PREFIX)
      ? layout.purgingFolder(name.slice(PURGING_PREFIX.length))
      : layout.archivedFolder(name);
    output.out(`left alone    ${path}: not a folder (a symlink is never followed)\n`);
  }
}
