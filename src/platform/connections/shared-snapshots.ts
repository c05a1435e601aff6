import type { Snapshot } from "./snapshot.ts";

/**
 * One parsed snapshot per (connection record, version), shared by every reader while any holds it.
 * A personal connection is a client in each workspace its owner is in (ADR 0042), and each client
 * pins the current snapshot, up to 1,000 tools of 64 KiB: read once per client, a member in W
 * workspaces made the process hold W parsed copies of each of their connections
 * (test/integration/connections-personal-snapshot-sharing.test.ts).
 *
 * Held weakly, so nothing here keeps a snapshot alive: it goes once the last source, view or diff
 * holding it lets it go, and its entry with it. A committed version is never rewritten (store.ts
 * appendSnapshot), and a record's id is never reused, so a kept copy is never stale. Readers share
 * the object: none may change it.
 */
export class SharedSnapshots {
  private readonly held = new Map<string, WeakRef<Snapshot>>();
  /** Reads under way, so readers arriving together parse the file once. */
  private readonly reading = new Map<string, Promise<Snapshot | undefined>>();
  private readonly released = new FinalizationRegistry<string>((key) => {
    // The key may hold a newer copy read after this one was let go.
    if (this.held.get(key)?.deref() === undefined) this.held.delete(key);
  });

  /** Version `version` of record `recordId`: the copy some reader holds, or `read()` once. */
  get(
    recordId: string,
    version: number,
    read: () => Promise<Snapshot | undefined>,
  ): Promise<Snapshot | undefined> {
    const key = `${recordId}/${version}`;
    const kept = this.held.get(key)?.deref();
    if (kept) return Promise.resolve(kept);
    const under = this.reading.get(key);
    if (under) return under;
    const reading = read()
      .then((snapshot) => {
        if (snapshot) {
          this.held.set(key, new WeakRef(snapshot));
          this.released.register(snapshot, key);
        }
        return snapshot;
      })
      .finally(() => this.reading.delete(key));
    this.reading.set(key, reading);
    return reading;
  }
}
