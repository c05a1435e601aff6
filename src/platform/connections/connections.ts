import { Conflict, Forbidden, WorkspaceNotFound } from "../../errors.ts";
import { refuseDeactivated } from "../../identity/users.ts";
import type { PublishedSkillList } from "../app.ts";
import { buildSources } from "./build-sources.ts";
import { type ConnectionView, DamagedConnections, viewConnection } from "./connection-view.ts";
import type { AuthorizationStarted, ConnectionsDeps, NewConnection } from "./connections-deps.ts";
import { ConnectionSource } from "./gate.ts";
import {
  type ConnectionRecord,
  type ConnectionState,
  checkAuth,
  checkConnectionName,
  checkServerUrl,
  isServed,
  newConnectionId,
  sealedCredentialIds,
  sealedCredentialOf,
} from "./model.ts";
import { addPendingOAuth, reauthorize, requireSnapshot } from "./oauth/pending.ts";
import { cameraOf, photographServer } from "./photograph-server.ts";
import { PublishedConnectionSkills } from "./published-skills.ts";
import { Refreshes } from "./refreshes.ts";
import { reservedNameProblem } from "./reserved-names.ts";
import { sealCredential } from "./seal-credential.ts";
import { Serving } from "./serving.ts";
import { diffSnapshots, type Snapshot } from "./snapshot.ts";
import { connectionNotFound } from "./store.ts";

/**
 * What members and admins do with a workspace's connections: add (photograph), refresh,
 * remove, look. Workspace admins manage; every member sees. The live gated source of each
 * connection is what the workspace's registry holds.
 */
export class Connections {
  /** The state each connection was last announced in, so only a change is announced. */
  private readonly announced = new Map<string, ConnectionState>();
  /** Records whose credential the revalidator found lapsed, so the gate refuses their calls: by id,
   * not name, so a check still under way for a removed connection cannot mark a new one of its name. */
  private readonly lapsed = new Set<string>();
  private readonly damaged: DamagedConnections;
  private readonly skills: PublishedConnectionSkills;
  private readonly serving: Serving;
  private readonly refreshes: Refreshes;

  constructor(private readonly deps: ConnectionsDeps) {
    this.damaged = new DamagedConnections(deps.log);
    this.skills = new PublishedConnectionSkills(
      deps.store,
      this.damaged,
      deps.log,
      deps.reservedNames,
      deps.clock,
      deps.timers,
    );
    this.serving = new Serving(deps.store, deps.sources, deps.reservedNames);
    this.refreshes = new Refreshes(deps.store, cameraOf(deps), deps.looks);
  }

  /**
   * A graceful stop: refreshes, first photographs and credential checks under way end at once,
   * recording nothing (adr/0122, amended); superseded clients still closing are cut
   * (Serving.stop); published skills are dropped.
   */
  async stop(): Promise<void> {
    this.deps.looks.endAll();
    await Promise.all([this.serving.stop(), this.skills.close()]);
  }

  /** A connection with `auth` none or static is photographed now; an OAuth one answers its go_url. */
  async add(
    workspaceId: string,
    principalId: string,
    request: NewConnection,
  ): Promise<ConnectionView | AuthorizationStarted> {
    this.requireAdmin(workspaceId, principalId);
    const name = checkConnectionName(request.name, this.deps.reservedNames);
    const target = checkServerUrl(request.url);
    const url = target.href;
    const auth = checkAuth(request.auth, target);
    if (this.deps.store.names(workspaceId).includes(name)) {
      throw new Conflict(
        "connection_exists",
        `A connection named "${name}" exists here; remove it first or choose another name.`,
      );
    }
    if (auth.kind === "oauth") return this.addOAuth(workspaceId, principalId, name, url, auth.scopes ?? []);
    const id = newConnectionId();
    const stored = await sealCredential(this.deps.vault, id, auth);
    const record: ConnectionRecord = {
      id,
      name,
      workspaceId,
      url,
      auth: stored,
      createdAt: new Date(this.deps.clock()).toISOString(),
      createdBy: principalId,
      authorizationGeneration: 1,
      snapshotVersion: 1,
      disabled: false,
    };
    try {
      const snapshot = await this.photograph(record, 1);
      // Again after the photograph, whose length the server chose, under the store's lock (adr/0129).
      await this.deps.store.create(record, snapshot, () => this.requireAdmin(workspaceId, principalId));
    } catch (error) {
      const sealed = sealedCredentialOf(stored);
      if (sealed) await this.deps.vault.delete(sealed);
      throw error;
    }
    await this.serve(workspaceId, name);
    this.deps.log.info({ workspaceId, connection: name }, "connection added");
    await this.announce(workspaceId, name);
    return this.view(workspaceId, name);
  }

  /**
   * An OAuth connection in `pending_auth`: discovered now (a server that cannot be authorized is
   * refused before anything is stored), stored without a snapshot, and photographed once the
   * admin's browser completes the authorization at the go_url.
   */
  private async addOAuth(
    workspaceId: string,
    principalId: string,
    name: string,
    url: string,
    scopes: string[],
  ): Promise<AuthorizationStarted> {
    const at = { workspaceId, name, url, scopes, createdBy: principalId };
    const link = await addPendingOAuth(this.deps, at, (record, signal) =>
      // Again after discovery, whose length the server chose (adr/0129, amended).
      this.deps.store.create(record, undefined, () => {
        signal.throwIfAborted();
        this.requireAdmin(workspaceId, principalId);
      }),
    );
    this.deps.log.info({ workspaceId, connection: name }, "connection added, pending authorization");
    await this.announce(workspaceId, name);
    return { ...link, connection: await this.view(workspaceId, name) };
  }

  /** Re-authorizes an OAuth connection (workspace admins): a new flow from the record as it is now. */
  async startAuthorization(
    workspaceId: string,
    principalId: string,
    name: string,
    request: { scopes?: unknown } = {},
  ): Promise<AuthorizationStarted> {
    this.requireAdmin(workspaceId, principalId);
    const record = await this.deps.store.get(workspaceId, name);
    const link = await reauthorize(this.deps.authorizer, record, principalId, request);
    return { ...link, connection: await this.view(workspaceId, name) };
  }

  /**
   * An authorization was activated: a connection still pending is photographed as snapshot 1 (a
   * look a disable or remove ends, refreshes.ts), then the registry gets a client with the new
   * tokens and the state is announced.
   */
  async activated(record: ConnectionRecord): Promise<void> {
    let current = record;
    if (current.snapshotVersion === 0)
      current = await this.refreshes.firstPhotograph(current.workspaceId, current);
    await this.changed(current.workspaceId, current.name);
  }

  /**
   * Photographs the server again, for an admin to review (refreshes.ts): the next snapshot when
   * anything changed, else the current one stays; answers what changed with a fresh client served.
   */
  async refresh(workspaceId: string, principalId: string, name: string) {
    this.requireAdmin(workspaceId, principalId);
    const changes = await this.refreshes.refresh(workspaceId, name, () =>
      this.requireAdmin(workspaceId, principalId),
    );
    await this.serve(workspaceId, name);
    return { connection: await this.view(workspaceId, name), changes };
  }

  /**
   * Takes a connection out of service or back (workspace admins): while disabled its tools are
   * not served, neither loop looks at it, and its record, snapshots and audit history stay.
   */
  async setDisabled(
    workspaceId: string,
    principalId: string,
    name: string,
    disabled: boolean,
  ): Promise<ConnectionView> {
    this.requireAdmin(workspaceId, principalId);
    // Checked once the connection is known to exist: one that does not is 404, whatever its name.
    const change = (current: ConnectionRecord) => {
      const reserved = disabled ? undefined : reservedNameProblem(name, this.deps.reservedNames);
      if (reserved) throw new Conflict(reserved.code, reserved.message);
      return { ...current, disabled };
    };
    // Again at the record's commit: an admin demoted while it waited changes nothing (adr/0154, amended).
    await this.deps.store.update(
      workspaceId,
      name,
      change,
      this.deps.looks.endOnDisable(workspaceId, name),
      () => this.requireAdmin(workspaceId, principalId),
    );
    if (disabled) await this.serving.withdraw(workspaceId, name, () => [workspaceId]);
    else await this.serve(workspaceId, name);
    this.deps.log.info(
      { workspaceId, connection: name, disabled },
      disabled ? "connection disabled" : "connection enabled",
    );
    await this.announce(workspaceId, name);
    return this.view(workspaceId, name);
  }

  async remove(workspaceId: string, principalId: string, name: string): Promise<void> {
    this.requireAdmin(workspaceId, principalId);
    // A damaged record is removed all the same: otherwise its name could be neither used again
    // nor seen in a listing. Which sealed credential it held cannot be read, so that one stays
    // sealed in the credential store, bound to a record that no longer exists.
    const record = await this.deps.store.remove(
      workspaceId,
      name,
      (error) => this.damaged.unreadable(name, error),
      () => this.requireAdmin(workspaceId, principalId),
    );
    this.deps.looks.end(workspaceId, name, connectionNotFound(name));
    // Before the withdrawal, which can fail (a client's close): what the removed connection
    // published must not outlive it.
    await this.skills.forget(workspaceId, name);
    await this.serving.withdraw(workspaceId, name, () => [workspaceId]);
    if (record?.auth.kind === "oauth") this.deps.authorizer.forget(record);
    for (const id of record ? sealedCredentialIds(record.auth) : []) await this.deps.vault.delete(id);
    this.announced.delete(`${workspaceId}/${name}`);
    if (record) this.lapsed.delete(record.id);
    this.deps.log.info(
      { workspaceId, connection: name, ...(record ? {} : { damaged: true }) },
      "connection removed",
    );
  }

  /** The current snapshot in full, or another version. */
  async snapshot(workspaceId: string, name: string, version?: number): Promise<Snapshot> {
    const record = await this.deps.store.get(workspaceId, name);
    if (version === undefined) requireSnapshot(record);
    return this.deps.store.snapshot(workspaceId, name, version ?? record.snapshotVersion);
  }

  snapshots(workspaceId: string, name: string) {
    return this.deps.store.snapshots(workspaceId, name);
  }

  /** What changed from one snapshot version to another, tool by tool. */
  async diff(workspaceId: string, name: string, from: number, to: number) {
    const [before, after] = await Promise.all([
      this.deps.store.snapshot(workspaceId, name, from),
      this.deps.store.snapshot(workspaceId, name, to),
    ]);
    return { from, to, ...diffSnapshots(before, after) };
  }

  async list(workspaceId: string): Promise<ConnectionView[]> {
    return this.damaged.readEach(this.deps.store, workspaceId, this.deps.store.names(workspaceId), (name) =>
      this.viewOf(workspaceId, name),
    );
  }

  /** One connection; a damaged one is refused as ConnectionDamaged. */
  view(workspaceId: string, name: string): Promise<ConnectionView> {
    return this.viewOf(workspaceId, name).catch((error: unknown) => this.damaged.refuse(name, error));
  }

  private async viewOf(workspaceId: string, name: string): Promise<ConnectionView> {
    const view = await viewConnection(this.deps.store, workspaceId, name, this.deps.reservedNames);
    const problem = reservedNameProblem(name, this.deps.reservedNames);
    return problem ? { ...view, problem } : view;
  }

  /** What the connections' current snapshots publish as server-scope skills (published-skills.ts). */
  publishedSkills(workspaceId: string): Promise<PublishedSkillList> {
    return this.skills.list(workspaceId);
  }

  /**
   * The gated sources of a workspace's connections, for its registry when it is built. One that
   * cannot be built (its credential refused) is logged and left out, never failing the others.
   */
  async sources(workspaceId: string): Promise<ConnectionSource[]> {
    // A pending OAuth connection has no snapshot to serve until it is authorized. One bearing a
    // platform app's name is never served: the registry refuses the name, which failed the whole
    // workspace's registry, every list and call in it answering 500 (adr/0128,
    // test/integration/connections-platform-app-name.test.ts).
    const records = (await this.deps.store.list(workspaceId)).filter((record) =>
      isServed(record, this.deps.reservedNames),
    );
    return buildSources(records, (record) => this.source(record), this.deps.log, workspaceId);
  }

  /**
   * A loop changed its conclusion: announce the derived state if it moved, and when the
   * transport came back, give the registry a fresh client (the old one's session is gone).
   */
  async changed(workspaceId: string, name: string): Promise<void> {
    // A removed connection is not found here; one removed meanwhile is marked by its own id.
    const record = await this.deps.store.get(workspaceId, name);
    const transport = await this.deps.store.transport(workspaceId, name);
    const credential = await this.deps.store.credential(workspaceId, name);
    if (credential.lapsed) this.lapsed.add(record.id);
    else this.lapsed.delete(record.id);
    if (transport.up) await this.serve(workspaceId, name);
    await this.announce(workspaceId, name);
  }

  /**
   * A fresh gated source in the workspace's registry, if the connection is served (serving.ts): one
   * bearing a platform app's name is not, as the registry refuses that name (adr/0128), and a
   * refresh, an activation or a health loop's change must leave the app in place, not fail.
   */
  private async serve(workspaceId: string, name: string): Promise<void> {
    await this.serving.serve(
      workspaceId,
      name,
      () => [workspaceId],
      (record) => this.source(record),
    );
  }

  private async announce(workspaceId: string, name: string): Promise<void> {
    const key = `${workspaceId}/${name}`;
    const { state } = await this.view(workspaceId, name);
    const previous = this.announced.get(key);
    if (previous === state) return;
    this.announced.set(key, state);
    this.deps.events.publish({ type: "connection.state_changed", workspaceId, name, state, previous });
  }

  private async source(record: ConnectionRecord): Promise<ConnectionSource> {
    const { store, remote, settings } = this.deps;
    const snapshot = await store.snapshot(record.workspaceId, record.name, record.snapshotVersion);
    if ((await store.credential(record.workspaceId, record.name)).lapsed) this.lapsed.add(record.id);
    const live = await remote.source(record, {
      listMaxAgeMs: settings.toolListMaxAgeMs,
      onStatus: (status) => {
        if (status === 401) this.deps.onUnauthorized(record.workspaceId, record.name);
      },
    });
    return new ConnectionSource(
      record.name,
      snapshot,
      live,
      { credentialLapsed: () => this.lapsed.has(record.id) },
      this.deps.ledger,
    );
  }

  /**
   * The server's next snapshot (photograph-server.ts); personal connections are photographed with
   * it too. A look (server-looks.ts), so a graceful stop ends an add's photograph as a refresh's.
   */
  photograph(record: ConnectionRecord, version: number): Promise<Snapshot> {
    const camera = cameraOf(this.deps);
    return this.deps.looks.runUntilStop((signal) => photographServer(camera, record, version, signal));
  }

  /**
   * Asked live, also after a remote server kept the caller waiting: a membership, a role or a
   * person may end meanwhile (adr/0129). Someone no longer a member gets the wall's 404.
   */
  private requireAdmin(workspaceId: string, principalId: string): void {
    const role = this.deps.workspaces.roleOf(workspaceId, principalId);
    if (role === undefined) throw new WorkspaceNotFound(workspaceId);
    refuseDeactivated(this.deps.users, principalId);
    if (role !== "admin") throw new Forbidden("Only a workspace admin can manage its connections.");
  }
}
