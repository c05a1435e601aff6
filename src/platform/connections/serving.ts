import type { Source } from "../../sources/source.ts";
import { KeyedLock } from "../../storage/keyed-lock.ts";
import type { WorkspaceSources } from "../app.ts";
import type { ConnectionSource } from "./gate.ts";
import { type ConnectionRecord, isServed } from "./model.ts";
import { type ConnectionStore, isConnectionNotFound } from "./store.ts";

/**
 * Puts a connection's gated source into workspace registries and takes it out, one at a time per
 * connection. Building a source takes turns of the event loop (its snapshot and credential are
 * read), and a removal or a disable that landed meanwhile was undone by the put that followed: a
 * removed or disabled connection served again. So a put serves only what the store says is in
 * service once it holds the connection's turn, and a take-out waits for a put under way, then
 * undoes it (test/unit/platform/connections/serving.test.ts). `key` is the store's: a workspace,
 * or a personal connection's owner.
 *
 * A turn holds only local work, never a wait on the server (adr/0109): the client a put
 * supersedes is closed after the turn, and not waited for (its close lets a connect under way
 * finish first); a take-out cuts the client it removes and every superseded one still closing. Closing inside the turn held every disable and remove behind a server that took the
 * TCP connection and never answered (test/integration/connections-races.test.ts).
 */
export class Serving {
  private readonly turns = new KeyedLock();
  /** The superseded sources of each connection (`<key>/<name>`) still closing. */
  private readonly closing = new Map<string, Set<Source>>();

  constructor(
    private readonly store: ConnectionStore,
    private readonly sources: WorkspaceSources,
    /** Platform app names, which no connection is served under (adr/0128). */
    private readonly appNames: readonly string[],
  ) {}

  /**
   * Serves the connection as it is stored now in each workspace `where` names then, if it is
   * served (`isServed`: not disabled, authorized, and bearing no platform app's name).
   */
  async serve(
    key: string,
    name: string,
    where: () => readonly string[],
    build: (record: ConnectionRecord) => Promise<ConnectionSource>,
  ): Promise<void> {
    const turn = `${key}/${name}`;
    // Closed after the turn, even when a later build fails: each is entered in `closing` as it is
    // replaced, so a take-out meanwhile cuts it (serving.test.ts "a build that fails").
    const superseded: Source[] = [];
    try {
      await this.turns.run(turn, async () => {
        let record: ConnectionRecord;
        try {
          record = await this.store.get(key, name);
        } catch (error) {
          if (isConnectionNotFound(error)) return;
          throw error;
        }
        if (!isServed(record, this.appNames)) return;
        for (const workspaceId of where()) {
          const previous = await this.sources.replace(workspaceId, () => build(record));
          if (!previous) continue;
          superseded.push(previous);
          const closing = this.closing.get(turn) ?? new Set<Source>();
          this.closing.set(turn, closing);
          closing.add(previous);
        }
      });
    } finally {
      // Not awaited: a superseded close waits for its connect, which a server that never answers
      // holds until the request timeout, and neither a refresh, an enable nor a health loop (whose
      // one run covers every workspace) should wait that long for a client it no longer serves.
      for (const source of superseded) void this.closeSuperseded(turn, source).catch(() => undefined);
    }
  }

  /**
   * A graceful stop: every superseded client still closing (its connect held by a server that
   * never answers) is cut, so none outlives the instance's close.
   */
  async stop(): Promise<void> {
    const closing = [...this.closing.values()].flatMap((sources) => [...sources]);
    await Promise.all(closing.map((source) => source.close("now").catch(() => undefined)));
  }

  private async closeSuperseded(turn: string, source: Source): Promise<void> {
    try {
      // A close that fails has nothing left to close.
      await source.close("superseded").catch(() => undefined);
    } finally {
      const closing = this.closing.get(turn);
      closing?.delete(source);
      if (closing?.size === 0) this.closing.delete(turn);
    }
  }

  /**
   * Takes the connection out of each workspace `where` names, after any put under way, and cuts
   * what it has under way with the server: the removed client's and every superseded one's.
   */
  async withdraw(key: string, name: string, where: () => readonly string[], owner?: string): Promise<void> {
    const turn = `${key}/${name}`;
    await this.turns.run(turn, async () => {
      const superseded = [...(this.closing.get(turn) ?? [])];
      await Promise.all([
        ...superseded.map((source) => source.close("now")),
        ...where().map((workspaceId) => this.sources.remove(workspaceId, name, owner)),
      ]);
    });
  }
}
