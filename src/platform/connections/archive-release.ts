import { join } from "node:path";
import { parseStoredJson } from "../../storage/atomic.ts";
import { type CredentialStore, isCredentialId } from "../../storage/credential-store.ts";
import { NoFollowReader, type PinnedFolder } from "../../storage/no-follow.ts";
import type { PartitionPaths } from "../../storage/paths.ts";
import { type ConnectionRecord, sealedCredentialIds } from "./model.ts";
import { RECORD, SERVERS } from "./store.ts";

/**
 * Removes the sealed credentials the connection records of one archived copy of a workspace name
 * (`archivedName`, as `_archive/` lists it; a staged add cut short included), the connections
 * app's archive releaser (ADR 0113). Only what is provably that workspace's goes (ADR 0142): no
 * link below the archive is followed (a `connections/` linked to a live workspace's would release
 * its credentials), nor `archive` (`_archive/` as the purge pinned it) swapped for one (ADR 0145),
 * a record is read only if it names this workspace and is no one's personal connection, and a
 * credential is removed only if it is sealed for that record. Answers what it left alone and
 * why, for the purge to report; those credentials stay sealed.
 */
export async function releaseArchivedCredentials(
  storage: Pick<PartitionPaths, "dir" | "archivedCopies">,
  credentials: Pick<CredentialStore, "deleteBoundTo">,
  workspaceId: string,
  archivedName: string,
  archive: PinnedFolder,
): Promise<string[]> {
  const reader = new NoFollowReader(archive);
  for (const { path, record } of await archivedRecords(reader, storage, workspaceId, archivedName)) {
    if (record.workspaceId !== workspaceId || record.owner !== undefined) {
      reader.leftAlone.push(`${path}: not a connection of ${workspaceId}, so its credentials stay sealed`);
      continue;
    }
    for (const id of sealedCredentialIds(record.auth)) {
      if (isCredentialId(id) && (await credentials.deleteBoundTo(id, record.id)) === "bound_elsewhere") {
        reader.leftAlone.push(`${path}: names a credential sealed for another record, which stays`);
      }
    }
  }
  return reader.leftAlone;
}

/** The connection records in the archived copy, each with its file's path; one that does not parse is left out. */
async function archivedRecords(
  reader: NoFollowReader,
  storage: Pick<PartitionPaths, "dir" | "archivedCopies">,
  workspaceId: string,
  archivedName: string,
): Promise<Array<{ path: string; record: ConnectionRecord }>> {
  const [servers] = storage.archivedCopies(workspaceId, join(storage.dir(workspaceId), SERVERS), [
    archivedName,
  ]);
  if (servers === undefined || !(await reader.isFolder(servers))) return [];
  const records: Array<{ path: string; record: ConnectionRecord }> = [];
  for (const folder of await reader.foldersIn(servers)) {
    const path = join(folder, RECORD);
    const text = await reader.readText(path);
    if (text === undefined) continue;
    let record: unknown;
    try {
      record = parseStoredJson(path, text);
    } catch (error) {
      if (error instanceof SyntaxError) continue;
      throw error;
    }
    if (isRecordWithAuth(record)) records.push({ path, record });
  }
  return records;
}

function isRecordWithAuth(value: unknown): value is ConnectionRecord {
  if (value === null || typeof value !== "object") return false;
  const { id, auth } = value as { id?: unknown; auth?: unknown };
  return typeof id === "string" && auth !== null && typeof auth === "object";
}
