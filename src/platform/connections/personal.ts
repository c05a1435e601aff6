import type { EventBus } from "../../kernel/events.ts";
import { NO_CALLER } from "../../workspace/access-check.ts";
import { DamagedConnections } from "./connection-view.ts";
import { Connections } from "./connections.ts";
import type { NewConnection, PersonalDeps } from "./connections-deps.ts";
import type { ConnectionSource } from "./gate.ts";
import { type ConnectionRecord, type ConnectionState, sealedCredentialIds } from "./model.ts";
import { reauthorize } from "./oauth/pending.ts";
import { mayActForOwner, requireMember } from "./personal-access.ts";
import { PersonalAdds } from "./personal-add.ts";
import { PersonalServing } from "./personal-serving.ts";
import { ownerOf } from "./personal-store.ts";
import {
  type PersonalAuthorizationStarted,
  type PersonalConnectionView,
  viewPersonal,
} from "./personal-view.ts";
import { cameraOf } from "./photograph-server.ts";
import { Refreshes } from "./refreshes.ts";
import type { Snapshot } from "./snapshot.ts";
import { connectionNotFound } from "./store.ts";

/**
 * A member's own connections (ADR 0042). Each is stored under its owner, so one sign-in serves
 * every workspace they are in, and is served as `my_<name>` to its owner alone. Every call
 * rechecks, live, that the owner is still a member of the calling workspace, not deactivated,
 * and — where the workspace has other members — holds an admin's grant for it there. Anyone
 * else addressing it meets `connection_not_found`, because every lookup is keyed by the caller.
 */
export class PersonalConnections {
  /** The same service as workspace connections, over the personal store keyed by owner. */
  private readonly core: Connections;
  /** The state each was last announced in to its owner (`<owner>/<name>`), so only a change is. */
  private readonly announced = new Map<string, ConnectionState>();
  private readonly damaged: DamagedConnections;
  private readonly serving: PersonalServing;
  private readonly adds: PersonalAdds;
  private readonly refreshes: Refreshes;

  constructor(private readonly deps: PersonalDeps) {
    this.core = new Connections(deps);
    this.damaged = new DamagedConnections(deps.log);
    this.serving = new PersonalServing(deps);
    this.adds = new PersonalAdds(deps, this.core, this.serving);
    this.refreshes = new Refreshes(deps.store, cameraOf(deps), deps.looks);
  }

  /** A graceful stop: looks at servers under way end, superseded clients are cut, the core's too. */
  async stop(): Promise<void> {
    this.deps.looks.endAll();
    await Promise.all([this.serving.stop(), this.core.stop()]);
  }

  /** A connection with `auth` none or static is photographed now; an OAuth one answers its go_url. */
  add(
    workspaceId: string,
    ownerId: string,
    request: NewConnection,
  ): Promise<PersonalConnectionView | PersonalAuthorizationStarted> {
    return this.adds.add(workspaceId, ownerId, request);
  }

  /**
   * Re-authorizes one of the caller's own OAuth connections. The lookup is keyed by the caller, so
   * anyone else's `my_` name answers `connection_not_found`, as a name nobody holds.
   */
  async startAuthorization(
    workspaceId: string,
    ownerId: string,
    name: string,
    request: { scopes?: unknown } = {},
  ): Promise<PersonalAuthorizationStarted> {
    const record = await this.deps.store.get(ownerId, name);
    const link = await reauthorize(this.deps.authorizer, record, ownerId, request);
    return { ...link, connection: await this.view(workspaceId, ownerId, name) };
  }

  /** The owner's authorization was activated: a pending connection is photographed as snapshot 1, then served. */
  async activated(record: ConnectionRecord): Promise<void> {
    const owner = ownerOf(record);
    if (record.snapshotVersion === 0) await this.refreshes.firstPhotograph(owner, record);
    await this.changed(owner, record.name);
  }

  async list(workspaceId: string, ownerId: string): Promise<PersonalConnectionView[]> {
    return this.damaged.readEach(this.deps.store, ownerId, this.deps.store.names(ownerId), (name) =>
      this.view(workspaceId, ownerId, name),
    );
  }

  view(workspaceId: string, ownerId: string, name: string): Promise<PersonalConnectionView> {
    return viewPersonal(this.core, this.deps, workspaceId, ownerId, name);
  }

  async remove(ownerId: string, name: string): Promise<void> {
    // A damaged record is removed all the same, as a workspace's is (connections.ts remove()). No
    // check at its commit (NO_CALLER): a personal connection is its owner's, and losing a
    // workspace does not take it from them; their own removal or disable lands wherever it is asked.
    const record = await this.deps.store.remove(
      ownerId,
      name,
      (error: unknown) => this.damaged.unreadable(name, error),
      NO_CALLER,
    );
    this.deps.looks.end(ownerId, name, connectionNotFound(name));
    await this.serving.withdrawEverywhere(ownerId, name);
    if (record?.auth.kind === "oauth") this.deps.authorizer.forget(record);
    for (const id of record ? sealedCredentialIds(record.auth) : []) await this.deps.vault.delete(id);
    if (record) this.serving.forget(record.id);
    this.announced.delete(`${ownerId}/${name}`);
    this.deps.log.info(
      { connection: name, ...(record ? {} : { damaged: true }) },
      "personal connection removed",
    );
  }

  async setDisabled(
    workspaceId: string,
    ownerId: string,
    name: string,
    disabled: boolean,
  ): Promise<PersonalConnectionView> {
    await this.deps.store.update(
      ownerId,
      name,
      (current) => ({ ...current, disabled }),
      this.deps.looks.endOnDisable(ownerId, name),
      NO_CALLER,
    );
    if (disabled) {
      await this.serving.withdrawEverywhere(ownerId, name);
    } else await this.serving.serveEverywhere(ownerId, name);
    return this.view(workspaceId, ownerId, name);
  }

  async refresh(workspaceId: string, ownerId: string, name: string) {
    // Again once the photograph is taken, whose length the server chose (adr/0129, amended).
    const changes = await this.refreshes.refresh(ownerId, name, () =>
      requireMember(this.deps, workspaceId, ownerId),
    );
    await this.serving.serveEverywhere(ownerId, name);
    return { connection: await this.view(workspaceId, ownerId, name), changes };
  }

  snapshot(ownerId: string, name: string, version?: number): Promise<Snapshot> {
    return this.core.snapshot(ownerId, name, version);
  }

  snapshots(ownerId: string, name: string) {
    return this.core.snapshots(ownerId, name);
  }

  diff(ownerId: string, name: string, from: number, to: number) {
    return this.core.diff(ownerId, name, from, to);
  }

  /** The personal sources of a workspace's members, for its registry when it is built (personal-serving.ts). */
  sources(workspaceId: string): Promise<ConnectionSource[]> {
    return this.serving.sources(workspaceId);
  }

  /** Whether `ownerId` may use a personal connection without a request (personal-access.ts). */
  mayActForOwner(ownerId: string): boolean {
    return mayActForOwner(this.deps, ownerId);
  }

  /**
   * A loop changed its conclusion about a personal connection: serve a fresh client if it is back,
   * and tell its owner alone of a new state, in each workspace they are in (an event with an owner).
   */
  async changed(ownerId: string, name: string): Promise<void> {
    const { events, workspaces } = this.deps;
    const key = `${ownerId}/${name}`;
    await this.serving.recheck(ownerId, name);
    const { state } = await this.core.view(ownerId, name);
    const previous = this.announced.get(key);
    if (state === previous) return;
    this.announced.set(key, state);
    for (const ws of workspaces.listFor(ownerId)) {
      events.publish({
        type: "connection.state_changed",
        workspaceId: ws.id,
        ownerId,
        name,
        state,
        previous,
      });
    }
  }

  /**
   * Joining a workspace brings a member's personal connections into its registry; leaving takes
   * them out and ends the member's grants there (coming back means asking again).
   */
  watchMembership(events: EventBus): void {
    events.subscribe({ types: ["member.added"] }, ({ workspaceId, principalId }) =>
      this.serving.joined(workspaceId, principalId),
    );
    events.subscribe({ types: ["member.removed"] }, async ({ workspaceId, principalId }) => {
      await this.serving.left(workspaceId, principalId);
      await this.deps.grants.remove(workspaceId, (g) => g.principalId === principalId, NO_CALLER);
    });
  }
}
