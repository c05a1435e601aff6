import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { readJsonIfExists } from "../../storage/atomic.ts";
import type { PartitionPaths } from "../../storage/paths.ts";
import type { ConnectionRecord } from "./model.ts";
import { RECORD, SERVERS } from "./store.ts";

/**
 * The connection records an archived copy of a workspace holds (`archivedName`, as `_archive/`
 * lists it), a staged add cut short included: what their sealed credentials are bound to. A record
 * that does not parse is left out (its credential stays sealed, bound to a record that is gone).
 */
export async function archivedRecords(
  storage: Pick<PartitionPaths, "dir" | "archivedCopies">,
  workspaceId: string,
  archivedName: string,
): Promise<ConnectionRecord[]> {
  const [servers] = storage.archivedCopies(workspaceId, join(storage.dir(workspaceId), SERVERS), [
    archivedName,
  ]);
  if (servers === undefined) return [];
  let names: string[];
  try {
    names = await readdir(servers);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
  const records: ConnectionRecord[] = [];
  for (const name of names) {
    const record = await readJsonIfExists(join(servers, name, RECORD)).catch((error: unknown) => {
      if (error instanceof SyntaxError || (error as NodeJS.ErrnoException).code === "ENOTDIR")
        return undefined;
      throw error;
    });
    if (hasAuth(record)) records.push(record);
  }
  return records;
}

function hasAuth(value: unknown): value is ConnectionRecord {
  if (value === null || typeof value !== "object") return false;
  const auth = (value as { auth?: unknown }).auth;
  return auth !== null && typeof auth === "object";
}
