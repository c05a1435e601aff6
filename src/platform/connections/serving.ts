import { KeyedLock } from "../../storage/keyed-lock.ts";
import type { WorkspaceSources } from "../app.ts";
import type { ConnectionSource } from "./gate.ts";
import type { ConnectionRecord } from "./model.ts";
import { type ConnectionStore, isConnectionNotFound } from "./store.ts";

/**
 * Puts a connection's gated source into workspace registries and takes it out, one at a time per
 * connection. Building a source takes turns of the event loop (its snapshot and credential are
 * read), and a removal or a disable that landed meanwhile was undone by the put that followed: a
 * removed or disabled connection served again. So a put serves only what the store says is in
 * service once it holds the connection's turn, and a take-out waits for a put under way, then
 * undoes it (test/unit/platform/connections/serving.test.ts). `key` is the store's: a workspace,
 * or a personal connection's owner.
 */
export class Serving {
  private readonly turns = new KeyedLock();

  constructor(
    private readonly store: ConnectionStore,
    private readonly sources: WorkspaceSources,
  ) {}

  /**
   * Serves the connection as it is stored now in each workspace `where` names then, unless it is
   * gone, disabled or not yet authorized (no snapshot).
   */
  async serve(
    key: string,
    name: string,
    where: () => readonly string[],
    build: (record: ConnectionRecord) => Promise<ConnectionSource>,
  ): Promise<void> {
    await this.turns.run(`${key}/${name}`, async () => {
      let record: ConnectionRecord;
      try {
        record = await this.store.get(key, name);
      } catch (error) {
        if (isConnectionNotFound(error)) return;
        throw error;
      }
      if (record.disabled || record.snapshotVersion === 0) return;
      for (const workspaceId of where()) await this.sources.replace(workspaceId, await build(record));
    });
  }

  /** Takes the connection out of each workspace `where` names, after any put under way. */
  async withdraw(key: string, name: string, where: () => readonly string[], owner?: string): Promise<void> {
    await this.turns.run(`${key}/${name}`, async () => {
      for (const workspaceId of where()) await this.sources.remove(workspaceId, name, owner);
    });
  }
}
