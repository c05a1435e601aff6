import { Conflict } from "../../errors.ts";

/**
 * The refreshes of each connection under way, so that a disable or a remove ends them (adr/0122).
 * A refresh photographs on a client of its own, outside Serving's turn, which neither cuts: left
 * alone, it connected and listed to its end (for a server that never answers, the request
 * timeout) only for the record to serve nothing of it (test/integration/connections-races.test.ts
 * "a refresh whose connection is disabled or removed while the server holds its photograph").
 *
 * Each refresh has a controller of its own, dropped when it ends, so nothing listens on a signal
 * that outlives it. `key` is the store's: a workspace, or a personal connection's owner.
 */
export class RefreshesUnderWay {
  private readonly underWay = new Map<string, Set<AbortController>>();

  /** Runs one refresh of the connection; its signal aborts when `end` is called meanwhile. */
  async run<T>(key: string, name: string, refresh: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const connection = `${key}/${name}`;
    const controller = new AbortController();
    const refreshes = this.underWay.get(connection) ?? new Set<AbortController>();
    this.underWay.set(connection, refreshes);
    refreshes.add(controller);
    try {
      return await refresh(controller.signal);
    } finally {
      refreshes.delete(controller);
      if (refreshes.size === 0) this.underWay.delete(connection);
    }
  }

  /**
   * The connection was disabled (stored) or removed: each refresh under way ends with `reason`,
   * and records nothing. A refresh that starts afterwards runs: a disabled connection may be
   * refreshed, for review before it is enabled.
   */
  end(key: string, name: string, reason: Error): void {
    for (const controller of this.underWay.get(`${key}/${name}`) ?? []) controller.abort(reason);
  }
}

/** What a refresh answers when its connection was disabled while it photographed. */
export function refreshInterrupted(name: string): Conflict {
  return new Conflict(
    "refresh_interrupted",
    `Connection "${name}" was disabled while its tools were being refreshed, so nothing was recorded; refresh it again to review its tools.`,
  );
}
