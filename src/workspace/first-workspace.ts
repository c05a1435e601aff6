import type { Principal } from "../identity/principal.ts";
import { KeyedLock } from "../storage/keyed-lock.ts";
import type { Workspace } from "./model.ts";
import type { WorkspaceStore } from "./store.ts";

/**
 * A person who belongs to no workspace gets an ordinary one, named for them, with them as
 * admin. The lock makes two concurrent bootstraps of one person create one workspace.
 */
export class FirstWorkspace {
  private readonly locks = new KeyedLock();

  constructor(private readonly store: WorkspaceStore) {}

  ensure(principal: Principal): Promise<Workspace[]> {
    return this.locks.run(principal.id, async () => {
      const mine = this.store.listFor(principal.id);
      if (mine.length > 0) return mine;
      await this.store.create(`${principal.displayName}'s workspace`, principal.id);
      return this.store.listFor(principal.id);
    });
  }
}
