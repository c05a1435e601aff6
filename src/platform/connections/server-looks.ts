import { Conflict } from "../../errors.ts";
import type { ConnectionRecord } from "./model.ts";

/**
 * Atrium's looks at a connection's server outside Serving's turn — an add's photograph or
 * discovery, a refresh, the first photograph after an authorization, a credential check — each
 * under a controller of its own, kept per connection while it runs (adr/0122); an add's, whose
 * name is no connection's yet, kept apart, as are an OAuth sign-in's discovery and client
 * registration (oauth/until-stop.ts), which only the stop ends. A disable or a remove ends that connection's looks,
 * and a graceful stop ends them all: each one's client is cut and it
 * records nothing. A look that starts after a disable or a remove runs; one that starts after the
 * stop began does not. `key` is the store's: a workspace, or a personal connection's owner. One
 * per store, shared by every service that looks at its connections.
 */
export class ServerLooks {
  private readonly underWay = new Map<string, Set<AbortController>>();
  private stopped = false;
  /** Adds' looks, by no connection's name (runUntilStop). */
  private readonly adds = new Set<AbortController>();

  /**
   * Runs `look` with a signal that a disable, a remove or a stop aborts; dropped when it ends. Once
   * the instance is stopping, a look starts ended.
   */
  async run<T>(key: string, name: string, look: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const connection = `${key}/${name}`;
    const controller = new AbortController();
    if (this.stopped) controller.abort(stopping());
    const looks = this.underWay.get(connection) ?? new Set<AbortController>();
    this.underWay.set(connection, looks);
    looks.add(controller);
    try {
      return await look(controller.signal);
    } finally {
      looks.delete(controller);
      if (looks.size === 0) this.underWay.delete(connection);
    }
  }

  /**
   * Runs an add's look, which only a graceful stop ends: its name is no connection's yet, so a
   * remove or disable of one stored under that name meanwhile is not its end (it would have
   * answered that one's 404 or 409 for an add whose name was free; connections-races.test.ts).
   */
  async runUntilStop<T>(look: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const controller = new AbortController();
    if (this.stopped) controller.abort(stopping());
    this.adds.add(controller);
    try {
      return await look(controller.signal);
    } finally {
      this.adds.delete(controller);
    }
  }

  /** The connection was removed: each look under way ends with `reason`, and records nothing. */
  end(key: string, name: string, reason: Error): void {
    for (const controller of this.underWay.get(`${key}/${name}`) ?? []) controller.abort(reason);
  }

  /**
   * What a disable's store update is told once written, under the connection's lock, so a
   * snapshot queued behind the write is not appended (aborted before it, a failed write ended a
   * look for a disable that never happened): on going out of service, the looks under way end. A
   * refresh of a connection already disabled runs, for review before it is enabled (adr/0122).
   */
  endOnDisable(key: string, name: string) {
    return (next: ConnectionRecord, previous: ConnectionRecord): void => {
      if (next.disabled && !previous.disabled) this.end(key, name, lookInterrupted(name));
    };
  }

  /**
   * A graceful stop: every look under way ends now, as a disable ends one, rather than holding the
   * stop for a server that never answers or being left to append after the root is let go.
   */
  endAll(): void {
    this.stopped = true;
    for (const looks of [...this.underWay.values(), this.adds]) {
      for (const controller of looks) controller.abort(stopping());
    }
  }
}

/** What a look answers when its connection was disabled while it ran. */
function lookInterrupted(name: string): Conflict {
  return new Conflict(
    "refresh_interrupted",
    `Connection "${name}" was disabled while Atrium was photographing its server, so nothing was recorded; refresh it (or authorize it again) to review its tools.`,
  );
}

/** Whether `error` is what a look the graceful stop ended answers (409 `stopping`). */
export function isStopping(error: unknown): boolean {
  return error instanceof Conflict && error.code === "stopping";
}

/** What a look answers when the instance stopped while it ran: the code of work a shutdown refuses. */
function stopping(): Conflict {
  return new Conflict(
    "stopping",
    "Atrium is stopping, so the server was not photographed and nothing was recorded: send it again once Atrium is back.",
  );
}
