import { readdir } from "node:fs/promises";
import { isPrincipalId } from "../../ids.ts";
import type { StorageLayout } from "../../storage/paths.ts";
import type { RecoveryPass } from "../../storage/recovery.ts";
import type { ConnectionRecord } from "./model.ts";
import { ConnectionStore, connectionNotFound } from "./store.ts";

const PARTITION = "connections";

/**
 * Personal connections are stored under their owner (ADR 0042),
 * `<root>/_instance/users/<owner>/connections/servers/<my_name>/`, in the same layout as a
 * workspace's and by the same store, keyed by the owner's principal id instead of a workspace id.
 */
export function createPersonalStore(layout: StorageLayout): ConnectionStore {
  return new ConnectionStore({ partition: PARTITION, dir: (owner) => layout.userConnectionsDir(owner) });
}

/** R1, R3, R4 in each person's connections; at boot, also the store's index of them. */
export async function recoverPersonalConnections(
  store: ConnectionStore,
  layout: StorageLayout,
  pass: RecoveryPass,
): Promise<void> {
  let people: string[];
  try {
    people = await readdir(layout.usersDir());
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  const present = new Set([PARTITION]);
  for (const person of people) if (isPrincipalId(person)) await store.recoverWorkspace(person, present, pass);
}

/** The owner a personal connection's record is stored under; a record without one is nobody's. */
export function ownerOf(record: ConnectionRecord): string {
  if (record.owner === undefined) throw connectionNotFound(record.name);
  return record.owner;
}
