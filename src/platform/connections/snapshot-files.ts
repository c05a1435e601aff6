import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { readJsonIfExists, writeFileAtomic } from "../../storage/atomic.ts";
import { makeFolderIfMissing } from "../../storage/folders.ts";
import type { ConnectionRecord } from "./model.ts";
import type { Snapshot } from "./snapshot.ts";

const SNAPSHOTS = "snapshots";
const SNAPSHOT_FILE = /^([1-9][0-9]{0,8})\.json$/;
/**
 * How many versions of a connection's snapshots are kept, newest first, as for a skill's versions
 * (ADR 0082): a refresh past them removes the oldest, so a server that changes at every listing
 * cannot grow the history without bound (adr/0091).
 */
export const KEPT_SNAPSHOTS = 100;

/*
 * A connection's snapshots, `snapshots/<n>.json` in its folder: append-only, a version committed by
 * the record naming it and never replaced once committed; one above the record's is a leftover,
 * never read. The store calls these under the connection's lock.
 */

/** The `snapshots/` folder of a connection's folder, where recovery sweeps temp files too. */
export function snapshotsFolder(connectionDir: string): string {
  return join(connectionDir, SNAPSHOTS);
}

/** Makes the empty `snapshots/` of a connection's folder being staged. */
export async function makeSnapshotsFolder(connectionDir: string): Promise<void> {
  await makeFolderIfMissing(snapshotsFolder(connectionDir));
}

/** Writes version `snapshot.version`; the caller commits it by writing the record after. */
export async function writeSnapshot(connectionDir: string, snapshot: Snapshot): Promise<void> {
  await writeFileAtomic(snapshotPath(connectionDir, snapshot.version), snapshotJson(snapshot));
}

/** Version `version` if the record has committed it and still keeps it. */
export async function readCommittedSnapshot(
  connectionDir: string,
  record: ConnectionRecord,
  version: number,
): Promise<Snapshot | undefined> {
  if (!isCommitted(version, record)) return undefined;
  return (await readJsonIfExists(snapshotPath(connectionDir, version))) as Snapshot | undefined;
}

/** The committed versions on disk, in the folder's order, and the path of each. */
export async function committedVersions(
  connectionDir: string,
  record: ConnectionRecord,
): Promise<{ versions: number[]; pathOf: (version: number) => string }> {
  const files = await readdir(snapshotsFolder(connectionDir));
  const versions = files.flatMap((file) => {
    const match = SNAPSHOT_FILE.exec(file);
    const version = Number(match?.[1]);
    return match && isCommitted(version, record) ? [version] : [];
  });
  return { versions, pathOf: (version) => snapshotPath(connectionDir, version) };
}

/**
 * Removes the versions the record no longer keeps (`isCommitted`). They are never read once the
 * record moved past them, so one a crash left is harmless and goes at the next append.
 */
export async function removeOldSnapshots(connectionDir: string, record: ConnectionRecord): Promise<void> {
  const dir = snapshotsFolder(connectionDir);
  for (const file of await readdir(dir)) {
    const version = Number(SNAPSHOT_FILE.exec(file)?.[1]);
    if (version > 0 && version <= record.snapshotVersion - KEPT_SNAPSHOTS)
      await rm(join(dir, file), { force: true });
  }
}

function snapshotPath(connectionDir: string, version: number): string {
  return join(snapshotsFolder(connectionDir), `${version}.json`);
}

/**
 * A snapshot as its file holds it: compact, unlike the other records here. Its tools are the
 * server's JSON, nested as deep as screening lets them (snapshot.ts), and indenting each level
 * multiplied a few kilobytes of nested arrays into megabytes on disk, per kept version; compact,
 * a file is the size screening measured (test/integration/connections-hostile-server.test.ts).
 * Snapshots written indented before are read as they are.
 */
function snapshotJson(snapshot: Snapshot): string {
  return `${JSON.stringify(snapshot)}\n`;
}

/**
 * Whether `version` names a snapshot the record has committed and still keeps: its current
 * version and the `KEPT_SNAPSHOTS - 1` before it.
 */
export function isCommitted(version: number, record: ConnectionRecord): boolean {
  return (
    Number.isInteger(version) &&
    version > Math.max(0, record.snapshotVersion - KEPT_SNAPSHOTS) &&
    version <= record.snapshotVersion
  );
}
