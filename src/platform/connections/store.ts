import { join } from "node:path";
import { Conflict, NotFound } from "../../errors.ts";
import { landedIsDone, readJsonIfExists, TEMP_PREFIX, writeJsonAtomic } from "../../storage/atomic.ts";
import { DiskCache } from "../../storage/disk-cache.ts";
import { KeyedLock } from "../../storage/keyed-lock.ts";
import {
  checkedBeforeCommit,
  makeInPartition,
  RecordExists,
  RecordFolders,
} from "../../storage/owned-records.ts";
import type { PartitionPaths } from "../../storage/paths.ts";
import { type LeftoverRules, type RecoveryPass, sweepTempEntries } from "../../storage/recovery.ts";
import type { AccessCheck } from "../../workspace/access-check.ts";
import type { ConnectionRecord, CredentialHealth, TransportHealth } from "./model.ts";
import { SharedSnapshots } from "./shared-snapshots.ts";
import type { Snapshot } from "./snapshot.ts";
import {
  committedVersions,
  isCommitted,
  makeSnapshotsFolder,
  readCommittedSnapshot,
  removeOldSnapshots,
  snapshotsFolder,
  writeSnapshot,
} from "./snapshot-files.ts";
import { type SnapshotSummary, summarizeSnapshots } from "./snapshot-summary.ts";

/** The folder of a workspace's connections folder that holds one folder per connection. */
export const SERVERS = "servers";
/** A connection's record in its folder: what its sealed credentials are bound to. */
export const RECORD = "connection.json";
const TRANSPORT = "transport.json";
const CREDENTIAL = "credential.json";
/**
 * Connections of a workspace at `<ws>/connections/servers/<name>/`: `connection.json` (the
 * record), `snapshots/<n>.json` (snapshot-files.ts),
 * and one file per health loop (`transport.json`, `credential.json`), so neither loop ever
 * writes the other's fields. A connection appears whole (staged and renamed) and is removed
 * whole. An index of which workspaces have connections, built at boot by the recovery walk and
 * kept by create and remove, lets the health loops skip every workspace without one.
 */
export class ConnectionStore implements LeftoverRules {
  private readonly folders = new RecordFolders();
  private readonly lock = new KeyedLock();
  private readonly index = new Map<string, Set<string>>();
  /** Records as last written, or read with no write ending meanwhile (ADR 0162), by `<ws>/<name>`. */
  private readonly records = new DiskCache<ConnectionRecord>();
  /** Each snapshot parsed once while anyone holds it: every workspace's client of a connection pins it. */
  private readonly parsed = new SharedSnapshots();

  /**
   * `storage.dir(key)` is where one key's connections live: a workspace's partition, or (the
   * personal store, ADR 0042) a person's folder, keyed by their principal id.
   */
  constructor(private readonly storage: Pick<PartitionPaths, "partition" | "dir">) {}

  /** Every (workspace, name) with a connection, from the index: no disk read. */
  *all(): Iterable<{ workspaceId: string; name: string }> {
    for (const [workspaceId, names] of this.index) for (const name of names) yield { workspaceId, name };
  }

  names(workspaceId: string): string[] {
    return [...(this.index.get(workspaceId) ?? [])].sort();
  }

  /**
   * A new connection, whole; without a snapshot while it waits for its first authorization
   * (pending_auth). `admitted` is asked under the connection's lock just before it is written, and
   * may throw: whether its adder may still add it, once the server had them wait (adr/0129).
   */
  async create(
    record: ConnectionRecord,
    snapshot: Snapshot | undefined,
    admitted: AccessCheck,
  ): Promise<void> {
    const key = record.owner ?? record.workspaceId;
    const dir = await this.ensureServersDir(key);
    try {
      await this.lock.run(`${key}/${record.name}`, async () => {
        admitted();
        // Kept as written: whatever this name held before is never what a create leaves in memory.
        await this.records.write(`${key}/${record.name}`, record, () =>
          this.folders.create(dir, record.name, async (staging) => {
            await writeJsonAtomic(join(staging, RECORD), record);
            await makeSnapshotsFolder(staging);
            if (snapshot) await writeSnapshot(staging, snapshot);
            await writeJsonAtomic(join(staging, TRANSPORT), {
              up: true,
              failures: 0,
            } satisfies TransportHealth);
            await writeJsonAtomic(join(staging, CREDENTIAL), { lapsed: false } satisfies CredentialHealth);
          }),
        );
      });
    } catch (error) {
      if (error instanceof RecordExists) {
        throw new Conflict(
          "connection_exists",
          `A connection named "${record.name}" exists here; remove it first or choose another name.`,
        );
      }
      throw error;
    }
    this.remember(key, record.name);
  }

  /**
   * The record, read from disk once and then kept: this store is its only writer (one root, one
   * process), and a workspace's skills and tools ask for every record on each listing. Read without
   * the lock, one a write overtook keeps nothing: kept, a disable was undone, a committed snapshot
   * rewritten (ADR 0162; test/unit/platform/connections/store-read-overtaken.test.ts).
   */
  async get(workspaceId: string, name: string): Promise<ConnectionRecord> {
    if (!this.has(workspaceId, name)) throw connectionNotFound(name);
    const key = `${workspaceId}/${name}`;
    const record =
      this.records.get(key) ??
      (await this.records.read(
        key,
        async () =>
          (await readJsonIfExists(this.file(workspaceId, name, RECORD))) as ConnectionRecord | undefined,
      ));
    if (!record) throw connectionNotFound(name);
    return record;
  }

  async list(workspaceId: string): Promise<ConnectionRecord[]> {
    const read = this.names(workspaceId).map((name) => this.get(workspaceId, name).catch(() => undefined));
    return (await Promise.all(read)).filter((record): record is ConnectionRecord => record !== undefined);
  }

  /**
   * Read-modify-write of the record, one at a time per connection; `written` is told under the lock.
   * `admitted` is asked just before the record's rename, and may throw: whether whoever changes it
   * may still (an admin's disable, an OAuth activation's opener, adr/0154 amended). Required here
   * as in `create` and `remove`: a change for no caller (an owner's own personal connection) names
   * `NO_CALLER` where it is made, so no caller's change skips its check by leaving it out.
   */
  async update(
    workspaceId: string,
    name: string,
    change: (record: ConnectionRecord) => ConnectionRecord,
    written: (next: ConnectionRecord, previous: ConnectionRecord) => void = () => undefined,
    admitted: AccessCheck,
  ): Promise<ConnectionRecord> {
    return this.lock.run(`${workspaceId}/${name}`, async () => {
      const previous = await this.get(workspaceId, name);
      const next = change(previous);
      await this.records.write(`${workspaceId}/${name}`, next, () =>
        writeJsonAtomic(this.file(workspaceId, name, RECORD), next, admitted),
      );
      written(next, previous);
      return next;
    });
  }

  /**
   * Adds the next snapshot and makes it current. A version is written once and never replaced.
   * `refresh` is the signal of the refresh appending it (refreshes.ts): one a disable ended while
   * it waited for the disable's write appends nothing.
   */
  async appendSnapshot(
    workspaceId: string,
    name: string,
    snapshot: Snapshot,
    refresh?: AbortSignal,
  ): Promise<ConnectionRecord> {
    return this.lock.run(`${workspaceId}/${name}`, async () => {
      refresh?.throwIfAborted();
      const current = await this.get(workspaceId, name);
      if (snapshot.version !== current.snapshotVersion + 1) {
        throw new Conflict(
          "snapshot_raced",
          "Another refresh of this connection finished first; look at its tools again.",
        );
      }
      // The record is the commit point. A file already there for this version is what an append
      // that failed or was killed before its commit left: never acknowledged, never listed or
      // read (below), so it is replaced rather than blocking every later refresh.
      await writeSnapshot(this.dir(workspaceId, name), snapshot);
      const next = { ...current, snapshotVersion: snapshot.version };
      await this.records.write(`${workspaceId}/${name}`, next, () =>
        writeJsonAtomic(this.file(workspaceId, name, RECORD), next),
      );
      await removeOldSnapshots(this.dir(workspaceId, name), next);
      return next;
    });
  }

  async snapshot(workspaceId: string, name: string, version: number): Promise<Snapshot> {
    const record = await this.get(workspaceId, name);
    // Asked before the shared copy: a version the record no longer keeps is not read, held or not.
    const snapshot = isCommitted(version, record)
      ? await this.parsed.get(record.id, version, () =>
          readCommittedSnapshot(this.dir(workspaceId, name), record, version),
        )
      : undefined;
    if (!snapshot)
      throw new NotFound("snapshot_not_found", `Connection "${name}" has no snapshot ${version}.`);
    return snapshot;
  }

  async snapshots(workspaceId: string, name: string): Promise<SnapshotSummary[]> {
    const record = await this.get(workspaceId, name);
    const { versions, pathOf } = await committedVersions(this.dir(workspaceId, name), record);
    return summarizeSnapshots(versions, pathOf);
  }

  async transport(workspaceId: string, name: string): Promise<TransportHealth> {
    return (
      ((await readJsonIfExists(this.file(workspaceId, name, TRANSPORT))) as TransportHealth | undefined) ?? {
        up: true,
        failures: 0,
      }
    );
  }

  async credential(workspaceId: string, name: string): Promise<CredentialHealth> {
    return (
      ((await readJsonIfExists(this.file(workspaceId, name, CREDENTIAL))) as
        | CredentialHealth
        | undefined) ?? { lapsed: false }
    );
  }

  /** The HealthMonitor's write; it owns `transport.json` alone. */
  async writeTransport(workspaceId: string, name: string, health: TransportHealth): Promise<void> {
    await this.writeHealth(workspaceId, name, TRANSPORT, health);
  }

  /**
   * The ConnectionRevalidator's write; it owns `credential.json` alone. `check` is the signal of
   * the check concluding (server-looks.ts): one a disable ended while the write waited behind the
   * disable's own writes nothing.
   */
  async writeCredential(
    workspaceId: string,
    name: string,
    health: CredentialHealth,
    check?: AbortSignal,
  ): Promise<void> {
    await this.writeHealth(workspaceId, name, CREDENTIAL, health, check);
  }

  /**
   * A loop's conclusion, written only while the connection exists: under its lock, which a removal
   * holds until the index has forgotten it, so a probe that outlived the connection writes
   * nothing rather than failing in a folder being removed (test/integration/connections-races.test.ts).
   */
  private async writeHealth(
    workspaceId: string,
    name: string,
    file: string,
    health: unknown,
    look?: AbortSignal,
  ): Promise<void> {
    await this.lock.run(`${workspaceId}/${name}`, async () => {
      // A conclusion that lands is done, though its folder could not be flushed: the loop then
      // tells the gate and announces it, as the disk already says it (adr/0166).
      if (this.has(workspaceId, name) && !look?.aborted)
        await writeJsonAtomic(this.file(workspaceId, name, file), health).catch(landedIsDone);
    });
  }

  /**
   * Removes the connection's folder, parsed or not (`unreadable` answers for a record that is not,
   * or throws), and answers its record read under the lock activation.ts swaps tokens under.
   * `admitted` is asked just before the folder's rename aside, as `update`'s.
   */
  async remove(
    workspaceId: string,
    name: string,
    unreadable: (error: unknown) => undefined,
    admitted: AccessCheck,
  ): Promise<ConnectionRecord | undefined> {
    if (!this.has(workspaceId, name)) throw connectionNotFound(name);
    const { removal, record } = await this.lock.run(`${workspaceId}/${name}`, async () => {
      // Asked again under the lock: a create writes its folder under it but indexes the name
      // after, so a remove queued behind one would otherwise take its folder for a lost record's.
      if (!this.has(workspaceId, name)) throw connectionNotFound(name);
      // Indexed, under its lock, with no record: the file is lost, and the folder goes all the same.
      const record = await this.get(workspaceId, name).catch((error: unknown) =>
        isConnectionNotFound(error) ? undefined : unreadable(error),
      );
      const removal = await this.folders.remove(
        this.serversDir(workspaceId),
        name,
        checkedBeforeCommit(admitted),
      );
      this.forget(workspaceId, name);
      return { removal, record };
    });
    if (removal === "gone") throw connectionNotFound(name);
    return record;
  }

  /**
   * R1, R3, R4 in the servers folder, and R1 inside each connection's folder and its snapshots,
   * where its record, health files and snapshots are written atomically; at boot, also the index
   * of connections.
   */
  async recoverWorkspace(
    workspaceId: string,
    present: ReadonlySet<string>,
    pass: RecoveryPass,
  ): Promise<void> {
    if (!present.has(this.storage.partition)) return;
    const servers = this.serversDir(workspaceId);
    const entries = await this.folders.sweep(servers, pass);
    for (const entry of entries) {
      if (!entry.isDirectory() || entry.name.startsWith(TEMP_PREFIX)) continue;
      if (pass.atBoot) this.remember(workspaceId, entry.name);
      await sweepTempEntries(join(servers, entry.name), pass);
      await sweepTempEntries(snapshotsFolder(join(servers, entry.name)), pass);
    }
  }

  /**
   * A workspace archived: its connections are no longer indexed. Answers the records it held in
   * memory, for the caller to forget what is kept beside them (live-workspaces.ts): a connection
   * whose record was not held has nothing kept anywhere, as holds() answered false for it.
   */
  forgetWorkspace(workspaceId: string): ConnectionRecord[] {
    const held: ConnectionRecord[] = [];
    for (const name of this.names(workspaceId)) {
      const record = this.records.get(`${workspaceId}/${name}`);
      if (record) held.push(record);
      this.records.delete(`${workspaceId}/${name}`);
    }
    this.index.delete(workspaceId);
    return held;
  }

  /**
   * Whether the connection has left the index, asked under its lock: a read that failed as a
   * removal took its folder is answered once that removal is done (connection-view.ts readEach).
   */
  async gone(workspaceId: string, name: string): Promise<boolean> {
    return this.lock.run(`${workspaceId}/${name}`, async () => !this.has(workspaceId, name));
  }

  /**
   * Whether connection `id` is the one stored under `name` now, without a disk read: false from the
   * moment a remove takes it out of the index (oauth/connection-tokens.ts then keeps nothing of
   * it). One neither read nor written since the boot is answered false: its tokens are used only
   * from a record read here (serving it, activating it, refreshing it), which a read keeps unless
   * a write overtook it (then the next read does).
   */
  holds(workspaceId: string, name: string, id: string): boolean {
    return this.has(workspaceId, name) && this.records.get(`${workspaceId}/${name}`)?.id === id;
  }

  private has(workspaceId: string, name: string): boolean {
    return this.index.get(workspaceId)?.has(name) ?? false;
  }

  private remember(workspaceId: string, name: string): void {
    const names = this.index.get(workspaceId) ?? new Set<string>();
    this.index.set(workspaceId, names);
    names.add(name);
  }

  private forget(workspaceId: string, name: string): void {
    this.records.delete(`${workspaceId}/${name}`);
    const names = this.index.get(workspaceId);
    names?.delete(name);
    if (names?.size === 0) this.index.delete(workspaceId);
  }

  private serversDir(workspaceId: string): string {
    return join(this.storage.dir(workspaceId), SERVERS);
  }

  private dir(workspaceId: string, name: string): string {
    return join(this.serversDir(workspaceId), name);
  }

  private file(workspaceId: string, name: string, file: string): string {
    return join(this.dir(workspaceId, name), file);
  }

  private async ensureServersDir(workspaceId: string): Promise<string> {
    await makeInPartition(this.serversDir(workspaceId), workspaceId);
    return this.serversDir(workspaceId);
  }
}

export function connectionNotFound(name: string): NotFound {
  return new NotFound(
    "connection_not_found",
    `No connection named ${JSON.stringify(name.slice(0, 64))} in this workspace.`,
  );
}

/** Whether `error` says the connection is not there (removed meanwhile, or never was). */
export function isConnectionNotFound(error: unknown): boolean {
  return error instanceof NotFound && error.code === "connection_not_found";
}
