import { Conflict, WorkspaceNotFound } from "../../errors.ts";
import { refuseDeactivated } from "../../identity/users.ts";
import type { EventBus } from "../../kernel/events.ts";
import { makeFolderPathIfMissing } from "../../storage/folders.ts";
import type { StorageLayout } from "../../storage/paths.ts";
import { buildSources } from "./build-sources.ts";
import { type ConnectionView, DamagedConnections } from "./connection-view.ts";
import { Connections } from "./connections.ts";
import type { ConnectionsDeps, NewConnection } from "./connections-deps.ts";
import { ConnectionSource } from "./gate.ts";
import type { GrantStore } from "./grants.ts";
import {
  type AuthRequest,
  type ConnectionRecord,
  type ConnectionState,
  checkAuth,
  checkServerUrl,
  newConnectionId,
  sealedCredentialIds,
  sealedCredentialOf,
} from "./model.ts";
import type { GoLink } from "./oauth/authorizer.ts";
import { addPendingOAuth, reauthorize } from "./oauth/pending.ts";
import { type GrantState, grantState, personalDenial } from "./personal-access.ts";
import { PersonalCap } from "./personal-cap.ts";
import { personalSourceName } from "./personal-name.ts";
import { Refreshes } from "./refreshes.ts";
import { sealCredential } from "./seal-credential.ts";
import { Serving } from "./serving.ts";
import type { Snapshot } from "./snapshot.ts";
import { type ConnectionStore, connectionNotFound } from "./store.ts";

/** A personal connection as its owner sees it from one workspace. */
export interface PersonalConnectionView extends Omit<ConnectionView, "state"> {
  personal: true;
  /** `needs_grant` when the workspace is shared and no admin granted it here. */
  state: ConnectionState | "needs_grant";
  grant: GrantState;
}

/** A personal OAuth connection as added or re-authorized: the go_url only its owner may open. */
export interface PersonalAuthorizationStarted extends GoLink {
  connection: PersonalConnectionView;
}

export interface PersonalDeps extends Omit<ConnectionsDeps, "store"> {
  /** The personal store, keyed by owner: `<root>/_instance/users/<owner>/connections/`. */
  store: ConnectionStore;
  layout: StorageLayout;
  grants: GrantStore;
}

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
  /** The records (by id, as in connections.ts) whose credential the revalidator found lapsed. */
  private readonly lapsed = new Set<string>();
  /** The state each was last announced in to its owner (`<owner>/<name>`), so only a change is. */
  private readonly announced = new Map<string, ConnectionState>();
  private readonly damaged: DamagedConnections;
  private readonly cap = new PersonalCap();
  private readonly serving: Serving;
  private readonly refreshes: Refreshes;

  constructor(private readonly deps: PersonalDeps) {
    this.core = new Connections(deps);
    this.damaged = new DamagedConnections(deps.log);
    this.serving = new Serving(deps.store, deps.sources, deps.reservedNames);
    this.refreshes = new Refreshes(deps.store, deps.remote, deps.clock, deps.looks);
  }

  /** A graceful stop: looks at servers under way end, superseded clients are cut, the core's too. */
  async stop(): Promise<void> {
    this.deps.looks.endAll();
    await Promise.all([this.serving.stop(), this.core.stop()]);
  }

  async add(
    workspaceId: string,
    ownerId: string,
    request: NewConnection,
  ): Promise<PersonalConnectionView | PersonalAuthorizationStarted> {
    this.requireMember(workspaceId, ownerId);
    const name = personalSourceName(request.name);
    const target = checkServerUrl(request.url);
    const url = target.href;
    const auth = checkAuth(request.auth, target);
    const { store } = this.deps;
    if (store.names(ownerId).includes(name)) {
      throw new Conflict(
        "connection_exists",
        `You have a personal connection named "${name}"; remove it first or choose another name.`,
      );
    }
    const place = this.cap.reserve(ownerId, store.names(ownerId).length);
    try {
      if (auth.kind === "oauth")
        return await this.addOAuth(workspaceId, ownerId, name, url, auth.scopes ?? []);
      return await this.addStatic(workspaceId, ownerId, name, url, auth);
    } finally {
      place.release();
    }
  }

  private async addStatic(
    workspaceId: string,
    ownerId: string,
    name: string,
    url: string,
    auth: Exclude<AuthRequest, { kind: "oauth" }>,
  ): Promise<PersonalConnectionView> {
    const { store, vault, clock, log } = this.deps;
    const id = newConnectionId();
    const stored = await sealCredential(this.deps.vault, id, auth);
    const record: ConnectionRecord = {
      id,
      name,
      workspaceId,
      owner: ownerId,
      url,
      auth: stored,
      createdAt: new Date(clock()).toISOString(),
      createdBy: ownerId,
      authorizationGeneration: 1,
      snapshotVersion: 1,
      disabled: false,
    };
    try {
      const snapshot = await this.core.photograph(record, 1);
      // The person's folder exists once they have signed in; made here for an owner who reached
      // Atrium only with a token, never before it was recorded.
      await makeFolderPathIfMissing(this.deps.layout.userConnectionsDir(ownerId));
      // Again after the photograph, whose length the server chose (adr/0129, amended).
      await store.create(record, snapshot, () => this.requireMember(workspaceId, ownerId));
    } catch (error) {
      const sealed = sealedCredentialOf(stored);
      if (sealed) await vault.delete(sealed);
      throw error;
    }
    await this.serveEverywhere(ownerId, name);
    log.info({ workspaceId, connection: name }, "personal connection added");
    return this.view(workspaceId, ownerId, name);
  }

  /**
   * A personal OAuth connection in `pending_auth`, as a workspace's is (Connections.addOAuth), but
   * stored under its owner and its flow theirs alone: the go_url opens for nobody else.
   */
  private async addOAuth(
    workspaceId: string,
    ownerId: string,
    name: string,
    url: string,
    scopes: string[],
  ): Promise<PersonalAuthorizationStarted> {
    const at = { workspaceId, name, url, scopes, createdBy: ownerId, owner: ownerId };
    const link = await addPendingOAuth(this.deps, at, async (record, signal) => {
      await makeFolderPathIfMissing(this.deps.layout.userConnectionsDir(ownerId));
      // Again after discovery, whose length the server chose (adr/0129, amended).
      await this.deps.store.create(record, undefined, () => {
        signal.throwIfAborted();
        this.requireMember(workspaceId, ownerId);
      });
    });
    this.deps.log.info({ workspaceId, connection: name }, "personal connection added, pending authorization");
    return { ...link, connection: await this.view(workspaceId, ownerId, name) };
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

  async view(workspaceId: string, ownerId: string, name: string): Promise<PersonalConnectionView> {
    const view = await this.core.view(ownerId, name);
    const grant = await grantState(this.deps, workspaceId, ownerId, name);
    // Authorizing comes before a grant matters: a pending connection says so, whatever the grant.
    const waiting = view.state === "disabled" || view.state === "pending_auth";
    const state = grant === "needed" && !waiting ? "needs_grant" : view.state;
    return { ...view, personal: true, state, grant };
  }

  async remove(ownerId: string, name: string): Promise<void> {
    // A damaged record is removed all the same, as a workspace's is (connections.ts remove()).
    const record = await this.deps.store.remove(ownerId, name, (error: unknown) =>
      this.damaged.unreadable(name, error),
    );
    this.deps.looks.end(ownerId, name, connectionNotFound(name));
    await this.withdrawEverywhere(ownerId, name);
    if (record?.auth.kind === "oauth") this.deps.authorizer.forget(record);
    for (const id of record ? sealedCredentialIds(record.auth) : []) await this.deps.vault.delete(id);
    if (record) this.lapsed.delete(record.id);
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
    );
    if (disabled) {
      await this.withdrawEverywhere(ownerId, name);
    } else await this.serveEverywhere(ownerId, name);
    return this.view(workspaceId, ownerId, name);
  }

  async refresh(workspaceId: string, ownerId: string, name: string) {
    // Again once the photograph is taken, whose length the server chose (adr/0129, amended).
    const changes = await this.refreshes.refresh(ownerId, name, () =>
      this.requireMember(workspaceId, ownerId),
    );
    await this.serveEverywhere(ownerId, name);
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
   * Whether `ownerId` may use a personal connection without a request (the health loops): not
   * deactivated and a member somewhere. Checked live before each look with the credential.
   */
  mayActForOwner(ownerId: string): boolean {
    return !this.deps.users.isDeactivated(ownerId) && this.deps.workspaces.listFor(ownerId).length > 0;
  }

  /**
   * A loop changed its conclusion about a personal connection: serve a fresh client if it is back,
   * and tell its owner alone of a new state, in each workspace they are in (an event with an owner).
   */
  async changed(ownerId: string, name: string): Promise<void> {
    const { store, events, workspaces } = this.deps;
    const key = `${ownerId}/${name}`;
    // A removed connection is not found here; one removed meanwhile is marked by its own id.
    const record = await store.get(ownerId, name);
    const credential = await store.credential(ownerId, name);
    if (credential.lapsed) this.lapsed.add(record.id);
    else this.lapsed.delete(record.id);
    if ((await store.transport(ownerId, name)).up) await this.serveEverywhere(ownerId, name);
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
    events.subscribe({ types: ["member.added"] }, async ({ workspaceId, principalId }) => {
      for (const name of this.deps.store.names(principalId))
        await this.serving.serve(
          principalId,
          name,
          () => [workspaceId],
          (record) => this.source(record),
        );
    });
    events.subscribe({ types: ["member.removed"] }, async ({ workspaceId, principalId }) => {
      for (const name of this.deps.store.names(principalId))
        await this.serving.withdraw(principalId, name, () => [workspaceId], principalId);
      await this.deps.grants.remove(workspaceId, (g) => g.principalId === principalId);
    });
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

  /**
   * Each workspace the owner is in gets its own client of the connection, in its registry, if it
   * is in service when its turn comes (serving.ts).
   */
  private async serveEverywhere(ownerId: string, name: string): Promise<void> {
    await this.serving.serve(
      ownerId,
      name,
      () => this.workspacesOf(ownerId),
      (record) => this.source(record),
    );
  }

  private async withdrawEverywhere(ownerId: string, name: string): Promise<void> {
    await this.serving.withdraw(ownerId, name, () => this.workspacesOf(ownerId), ownerId);
  }

  private workspacesOf(ownerId: string): string[] {
    return this.deps.workspaces.listFor(ownerId).map((ws) => ws.id);
  }

  /**
   * Asked live, also after a remote server kept the caller waiting (adr/0129): someone no longer a
   * member gets the wall's 404, as for a workspace they never belonged to; a deactivated person 403.
   */
  private requireMember(workspaceId: string, principalId: string): void {
    if (this.deps.workspaces.roleOf(workspaceId, principalId) === undefined)
      throw new WorkspaceNotFound(workspaceId);
    refuseDeactivated(this.deps.users, principalId);
  }
}

function ownerOf(record: ConnectionRecord): string {
  if (record.owner === undefined) throw connectionNotFound(record.name);
  return record.owner;
}
