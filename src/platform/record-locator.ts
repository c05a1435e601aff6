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

  set(recordId: string, location: RecordLocation): void {
    const key = `${location.workspaceId}/${location.ownerId}`;
    let shared = this.partitions.get(key);
    if (!shared) {
      shared = { workspaceId: location.workspaceId, ownerId: location.ownerId };
      this.partitions.set(key, shared);
    }
    this.byId.set(recordId, shared);
  }

  delete(recordId: string): void {
    this.byId.delete(recordId);
  }
}
