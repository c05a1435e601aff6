import type { ConnectionRecord } from "./model.ts";
import { requireSnapshot } from "./oauth/pending.ts";
import { type Camera, photographServer } from "./photograph-server.ts";
import type { ServerLooks } from "./server-looks.ts";
import { diffSnapshots, pinsSame } from "./snapshot.ts";
import type { ConnectionStore } from "./store.ts";

/**
 * Refreshing a connection's tools, for an admin (or a personal connection's owner) to review: its
 * server photographed again, and appended as the next snapshot only when something it pins changed
 * (`pinsSame`), so refreshing alone never grows the history (adr/0091). `key` is the store's: a
 * workspace, or a personal connection's owner.
 *
 * A disable, a remove or a graceful stop ends the refreshes under way (adr/0122): each runs as one
 * of the store's looks at a server (server-looks.ts). A refresh photographs on a client of its own,
 * outside Serving's turn, which neither cuts: left alone, it connected and listed to its end (for a
 * server that never answers, the request timeout) only for the record to serve nothing of it
 * (test/integration/connections-races.test.ts "a refresh whose connection is disabled or removed
 * while the server holds its photograph").
 */
export class Refreshes {
  constructor(
    private readonly store: ConnectionStore,
    private readonly camera: Camera,
    private readonly looks: ServerLooks,
  ) {}

  /**
   * Photographs the connection's server again: what changed since its current snapshot.
   * `stillAllowed` is asked once the photograph is taken, before anything is recorded: the server
   * chose how long that took, and may throw.
   */
  refresh(
    key: string,
    name: string,
    stillAllowed: () => void = () => undefined,
  ): Promise<ReturnType<typeof diffSnapshots>> {
    return this.looks.run(key, name, (signal) => this.rephotograph(key, name, signal, stillAllowed));
  }

  /**
   * The first photograph of an OAuth connection once its authorization activated, appended as
   * snapshot 1: a look like a refresh, so a disable, a remove or a stop ends it and nothing is
   * appended after the disable was written (adr/0122, amended). The record as it is now.
   */
  firstPhotograph(key: string, record: ConnectionRecord): Promise<ConnectionRecord> {
    return this.looks.run(key, record.name, async (signal) => {
      const taken = await photographServer(this.camera, record, 1, signal);
      return this.store.appendSnapshot(key, record.name, taken, signal);
    });
  }

  private async rephotograph(key: string, name: string, signal: AbortSignal, stillAllowed: () => void) {
    const record = await this.store.get(key, name);
    requireSnapshot(record);
    const previous = await this.store.snapshot(key, name, record.snapshotVersion);
    const version = record.snapshotVersion + 1;
    const taken = await photographServer(this.camera, record, version, signal);
    signal.throwIfAborted();
    stillAllowed();
    if (!pinsSame(previous, taken)) await this.store.appendSnapshot(key, name, taken, signal);
    return diffSnapshots(previous, taken);
  }
}
