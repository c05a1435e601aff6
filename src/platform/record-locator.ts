import type { OwnerEntries } from "../storage/owned-records.ts";

/** Where an owned record lives: the two coordinates its path carries. */
export interface RecordLocation {
  readonly workspaceId: string;
  readonly ownerId: string;
}

/** An id a recovery walk found at a place while the locator already knew it at another. */
export interface DuplicateRecord {
  readonly recordId: string;
  /** Every place the id is known at now, the one just found last. */
  readonly locations: readonly RecordLocation[];
}

/**
 * Record id → (workspace, owner), for the bare-id routes (`/v1/files/:id`, `/v1/conversations/:id`):
 * one map lookup whatever the number of workspaces (issue 10, Reliability 4; adr/0025). Each app
 * keeps its own, rebuilt at boot from folder names and kept by its writers. Entries of one
 * partition share one location object, so an entry costs the id and a reference.
 *
 * An id is kept with every place it was found, not the last one walked: an operator's copy of a
 * record under another owner, or a restore into a second workspace, holds the same id twice, and
 * which of the two a walk reaches last depends on the directory order (adr/0111). Only such an id
 * holds an array; each lookup then picks among the caller's own places alone.
 */
export class RecordLocator {
  private readonly byId = new Map<string, RecordLocation | RecordLocation[]>();
  private readonly partitions = new Map<string, RecordLocation>();

  /**
   * The workspaces where `ownerId` holds `recordId` and is a member now (`isMember`), so a
   * workspace they left, and another owner's copy, are never reached; sorted. A miss is final:
   * the locator holds every record written through Atrium and found by the last recovery walk
   * (adr/0025). When more than one is left, those `isThere` no longer finds on disk (an operator
   * removed a copy) are forgotten first, so a resolved duplicate needs no restart (adr/0111).
   */
  async workspacesOf(
    ownerId: string,
    recordId: string,
    isMember: (workspaceId: string) => boolean,
    isThere: (location: RecordLocation) => Promise<boolean>,
  ): Promise<string[]> {
    const own = this.locationsOf(recordId).filter(
      (location) => location.ownerId === ownerId && isMember(location.workspaceId),
    );
    if (own.length < 2) return own.map((location) => location.workspaceId);
    const present: string[] = [];
    for (const location of own) {
      if (await isThere(location)) present.push(location.workspaceId);
      else this.delete(recordId, location);
    }
    return present.sort();
  }

  /** Adds a place of `recordId`; answers true when the id was known at another place already. */
  set(recordId: string, location: RecordLocation): boolean {
    const key = `${location.workspaceId}/${location.ownerId}`;
    let shared = this.partitions.get(key);
    if (!shared) {
      shared = { workspaceId: location.workspaceId, ownerId: location.ownerId };
      this.partitions.set(key, shared);
    }
    const known = this.locationsOf(recordId);
    if (known.includes(shared)) return false;
    this.byId.set(recordId, known.length === 0 ? shared : [...known, shared]);
    return known.length > 0;
  }

  /**
   * Every record a recovery walk found in a workspace's owner folders, by the id `idOf` reads in
   * an entry's name: at boot all of them, at housekeeping also what an operator put there on disk.
   * Answers the ids this walk found at a new place while they were known at another, so the app
   * can say so once (a later walk finds the same places known).
   */
  remember(
    workspaceId: string,
    owners: readonly OwnerEntries[],
    idOf: (entryName: string) => string | undefined,
  ): DuplicateRecord[] {
    const duplicates: DuplicateRecord[] = [];
    for (const { ownerId, entries } of owners) {
      for (const entry of entries) {
        const id = idOf(entry.name);
        if (id !== undefined && this.set(id, { workspaceId, ownerId }))
          duplicates.push({ recordId: id, locations: this.locationsOf(id) });
      }
    }
    return duplicates;
  }

  /** Forgets one place of `recordId`; its other places stay. */
  delete(recordId: string, location: RecordLocation): void {
    const left = this.locationsOf(recordId).filter(
      (known) => known.workspaceId !== location.workspaceId || known.ownerId !== location.ownerId,
    );
    if (left.length === 0) this.byId.delete(recordId);
    else this.byId.set(recordId, left.length === 1 ? (left[0] as RecordLocation) : left);
  }

  private locationsOf(recordId: string): readonly RecordLocation[] {
    const found = this.byId.get(recordId);
    return found === undefined ? [] : Array.isArray(found) ? found : [found];
  }
}
