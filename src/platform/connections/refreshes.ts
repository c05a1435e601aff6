import { Conflict } from "../../errors.ts";
import type { Clock } from "../../kernel/clock.ts";
import type { ConnectionRecord } from "./model.ts";
import { requireSnapshot } from "./oauth/pending.ts";
import { photographServer } from "./photograph-server.ts";
import type { RemoteServers } from "./remote.ts";
import { diffSnapshots, pinsSame } from "./snapshot.ts";
import type { ConnectionStore } from "./store.ts";

/**
 * Refreshing a connection's tools, for an admin (or a personal connection's owner) to review: its
 * server photographed again, and appended as the next snapshot only when something it pins changed
 * (`pinsSame`), so refreshing alone never grows the history (adr/0091). `key` is the store's: a
 * workspace, or a personal connection's owner.
 *
 * A disable or a remove ends the refreshes under way (adr/0122). A refresh photographs on a client
 * of its own, outside Serving's turn, which neither cuts: left alone, it connected and listed to
 * its end (for a server that never answers, the request timeout) only for the record to serve
 * nothing of it (test/integration/connections-races.test.ts "a refresh whose connection is
 * disabled or removed while the server holds its photograph"). Each refresh has a controller of
 * its own, dropped when it ends, so nothing listens on a signal that outlives it.
 */
export class Refreshes {
  private readonly underWay = new Map<string, Set<AbortController>>();

  constructor(
    private readonly store: ConnectionStore,
    private readonly remote: RemoteServers,
    private readonly clock: Clock,
  ) {}

  /**
   * Photographs the connection's server again: what changed since its current snapshot.
   * `stillAllowed` is asked once the photograph is taken, before anything is recorded: the server
   * chose how long that took, and may throw.
   */
  async refresh(
    key: string,
    name: string,
    stillAllowed: () => void = () => undefined,
  ): Promise<ReturnType<typeof diffSnapshots>> {
    const connection = `${key}/${name}`;
    const controller = new AbortController();
    const refreshes = this.underWay.get(connection) ?? new Set<AbortController>();
    this.underWay.set(connection, refreshes);
    refreshes.add(controller);
    try {
      return await this.rephotograph(key, name, controller.signal, stillAllowed);
    } finally {
      refreshes.delete(controller);
      if (refreshes.size === 0) this.underWay.delete(connection);
    }
  }

  /**
   * The connection was removed: each refresh under way ends with `reason`, and records nothing. A
   * refresh that starts afterwards runs.
   */
  end(key: string, name: string, reason: Error): void {
    for (const controller of this.underWay.get(`${key}/${name}`) ?? []) controller.abort(reason);
  }

  /**
   * What a disable's store update is told once written, under the connection's lock, so a
   * snapshot queued behind the write is not appended (aborted before it, a failed write ended a
   * refresh for a disable that never happened): on going out of service, the refreshes under way
   * end. A refresh of a connection already disabled runs, for review before it is enabled
   * (adr/0122).
   */
  endOnDisable(key: string, name: string) {
    return (next: ConnectionRecord, previous: ConnectionRecord): void => {
      if (next.disabled && !previous.disabled) this.end(key, name, refreshInterrupted(name));
    };
  }

  private async rephotograph(key: string, name: string, signal: AbortSignal, stillAllowed: () => void) {
    const record = await this.store.get(key, name);
    requireSnapshot(record);
    const previous = await this.store.snapshot(key, name, record.snapshotVersion);
    const version = record.snapshotVersion + 1;
    const taken = await photographServer(this.remote, this.clock, record, version, signal);
    signal.throwIfAborted();
    stillAllowed();
    if (!pinsSame(previous, taken)) await this.store.appendSnapshot(key, name, taken, signal);
    return diffSnapshots(previous, taken);
  }
}

/** What a refresh answers when its connection was disabled while it photographed. */
function refreshInterrupted(name: string): Conflict {
  return new Conflict(
    "refresh_interrupted",
    `Connection "${name}" was disabled while its tools were being refreshed, so nothing was recorded; refresh it again to review its tools.`,
  );
}
