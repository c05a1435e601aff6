import type { OwnerEntries } from "../storage/owned-records.ts";

/** Where an owned record lives: the two coordinates its path carries. */
export interface RecordLocation {
  readonly workspaceId: string;
  readonly ownerId: string;
}

/**
 * Record id → (workspace, owner), for the bare-id routes (`/v1/files/:id`, `/v1/conversations/:id`):
 * one map lookup whatever the number of workspaces (issue 10, Reliability 4; adr/0025). Each app
 * keeps its own, rebuilt at boot from folder names and kept by its writers. Entries of one
 * partition share one location object, so an entry costs the id and a reference.
 */
export class RecordLocator {
  private readonly byId = new Map<string, RecordLocation>();
  private readonly partitions = new Map<string, RecordLocation>();

  get(recordId: string): RecordLocation | undefined {
    return this.byId.get(recordId);
  }

  /**
   * The workspace of `recordId` when `ownerId` owns it and is a member of that workspace now
   * (`isMember`), so a workspace they left is not reached; undefined otherwise. A miss is final:
   * the locator holds every record written through Atrium and found by the last recovery walk
   * (adr/0025).
   */
  workspaceOf(
    ownerId: string,
    recordId: string,
    isMember: (workspaceId: string) => boolean,
  ): string | undefined {
    const found = this.byId.get(recordId);
    return found && found.ownerId === ownerId && isMember(found.workspaceId) ? found.workspaceId : undefined;
  }

  set(recordId: string, location: RecordLocation): void {
    const key = `${location.workspaceId}/${location.ownerId}`;
    let shared = this.partitions.get(key);
    if (!shared) {
      shared = { workspaceId: location.workspaceId, ownerId: location.ownerId };
      this.partitions.set(key, shared);
    }
    this.byId.set(recordId, shared);
  }

  /**
   * Every record a recovery walk found in a workspace's owner folders, by the id `idOf` reads in
   * an entry's name: at boot all of them, at housekeeping also what an operator put there on disk.
   */
  remember(
    workspaceId: string,
    owners: readonly OwnerEntries[],
    idOf: (entryName: string) => string | undefined,
  ): void {
    for (const { ownerId, entries } of owners) {
      for (const entry of entries) {
        const id = idOf(entry.name);
        if (id !== undefined) this.set(id, { workspaceId, ownerId });
      }
    }
  }

  delete(recordId: string): void {
    this.byId.delete(recordId);
  }
}
