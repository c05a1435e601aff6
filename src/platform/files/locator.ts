/** Where a file lives: the two coordinates its path carries. */
export interface FileLocation {
  readonly workspaceId: string;
  readonly ownerId: string;
}

/**
 * File id → (workspace, owner), for the bare-id routes: one map lookup whatever the number of
 * workspaces (issue 10, Reliability 4). Entries of one partition share one location object,
 * so an entry costs the id and a reference.
 */
export class FileLocator {
  private readonly byId = new Map<string, FileLocation>();
  private readonly partitions = new Map<string, FileLocation>();

  get(fileId: string): FileLocation | undefined {
    return this.byId.get(fileId);
  }

  set(fileId: string, location: FileLocation): void {
    const key = `${location.workspaceId}/${location.ownerId}`;
    let shared = this.partitions.get(key);
    if (!shared) {
      shared = { workspaceId: location.workspaceId, ownerId: location.ownerId };
      this.partitions.set(key, shared);
    }
    this.byId.set(fileId, shared);
  }

  delete(fileId: string): void {
    this.byId.delete(fileId);
  }
}
