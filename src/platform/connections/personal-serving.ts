import { buildSources } from "./build-sources.ts";
import type { PersonalDeps } from "./connections-deps.ts";
import { ConnectionSource } from "./gate.ts";
import type { ConnectionRecord } from "./model.ts";
import { personalDenial } from "./personal-access.ts";
import { ownerOf } from "./personal-store.ts";
import { Serving } from "./serving.ts";

/**
 * A member's own connections in the registries of the workspaces they are in (ADR 0042): each
 * workspace gets its own client of a connection, gated so it acts for its owner alone, where and
 * while the owner may use it (personal-access.ts, asked per call).
 */
export class PersonalServing {
  private readonly serving: Serving;
  /** The records (by id, as in connections.ts) whose credential the revalidator found lapsed. */
  private readonly lapsed = new Set<string>();

  constructor(private readonly deps: PersonalDeps) {
    this.serving = new Serving(deps.store, deps.sources, deps.reservedNames);
  }

  /** Superseded clients still closing are cut (Serving.stop). */
  stop(): Promise<void> {
    return this.serving.stop();
  }

  /**
   * The personal sources of a workspace's members, for its registry when it is built. One that
   * cannot be built is logged and left out. Whether each may act is decided per call, not here.
   */
  async sources(workspaceId: string): Promise<ConnectionSource[]> {
    const members = this.deps.workspaces.get(workspaceId)?.members ?? [];
    // A pending OAuth connection has no snapshot to serve until its owner authorizes it.
    const records = (await Promise.all(members.map((m) => this.deps.store.list(m.principalId))))
      .flat()
      .filter((record) => record.snapshotVersion > 0);
    return buildSources(records, (record) => this.source(record), this.deps.log, workspaceId);
  }

  /**
   * Each workspace the owner is in gets its own client of the connection, in its registry, if it
   * is in service when its turn comes (serving.ts).
   */
  async serveEverywhere(ownerId: string, name: string): Promise<void> {
    await this.serving.serve(
      ownerId,
      name,
      () => this.workspacesOf(ownerId),
      (record) => this.source(record),
    );
  }

  async withdrawEverywhere(ownerId: string, name: string): Promise<void> {
    await this.serving.withdraw(ownerId, name, () => this.workspacesOf(ownerId), ownerId);
  }

  /** A member who joined `workspaceId` brings each of their connections into its registry. */
  async joined(workspaceId: string, ownerId: string): Promise<void> {
    for (const name of this.deps.store.names(ownerId))
      await this.serving.serve(
        ownerId,
        name,
        () => [workspaceId],
        (record) => this.source(record),
      );
  }

  /** A member who left `workspaceId` takes each of their connections out of its registry. */
  async left(workspaceId: string, ownerId: string): Promise<void> {
    for (const name of this.deps.store.names(ownerId))
      await this.serving.withdraw(ownerId, name, () => [workspaceId], ownerId);
  }

  /**
   * A loop looked at the connection again: the gate refuses its calls while its credential is
   * lapsed, and a fresh client is served once its server is up.
   */
  async recheck(ownerId: string, name: string): Promise<void> {
    const { store } = this.deps;
    // A removed connection is not found here; one removed meanwhile is marked by its own id.
    const record = await store.get(ownerId, name);
    const credential = await store.credential(ownerId, name);
    if (credential.lapsed) this.lapsed.add(record.id);
    else this.lapsed.delete(record.id);
    if ((await store.transport(ownerId, name)).up) await this.serveEverywhere(ownerId, name);
  }

  /** A removed record's lapsed mark goes with it. */
  forget(recordId: string): void {
    this.lapsed.delete(recordId);
  }

  private async source(record: ConnectionRecord): Promise<ConnectionSource> {
    const { store, remote, settings } = this.deps;
    const owner = ownerOf(record);
    const snapshot = await store.snapshot(owner, record.name, record.snapshotVersion);
    if ((await store.credential(owner, record.name)).lapsed) this.lapsed.add(record.id);
    const live = await remote.source(record, {
      listMaxAgeMs: settings.toolListMaxAgeMs,
      onStatus: (status) => {
        if (status === 401) this.deps.onUnauthorized(owner, record.name);
      },
    });
    return new ConnectionSource(
      record.name,
      snapshot,
      live,
      {
        credentialLapsed: () => this.lapsed.has(record.id),
        mayUse: (caller) => personalDenial(this.deps, record, owner, caller),
      },
      this.deps.ledger,
      owner,
    );
  }

  private workspacesOf(ownerId: string): string[] {
    return this.deps.workspaces.listFor(ownerId).map((ws) => ws.id);
  }
}
