import { AtriumError, NotFound } from "../../errors.ts";
import type { Logger } from "../../log.ts";
import { CorruptJson } from "../../storage/atomic.ts";
import { type ConnectionState, deriveState, type StoredAuth, shownUrl } from "./model.ts";
import type { ReservedNameProblem } from "./reserved-names.ts";
import { type ConnectionStore, isConnectionNotFound } from "./store.ts";

/** A connection as every API answers it: never a credential's value. */
export interface ConnectionView {
  name: string;
  url: string;
  auth:
    | { kind: "none" }
    | { kind: "static"; header: string }
    | { kind: "query"; param: string }
    | { kind: "oauth"; scopes: string[]; issuer: string };
  state: ConnectionState;
  authorizationGeneration: number;
  createdAt: string;
  createdBy: string;
  /** `null` while pending_auth: an OAuth connection is photographed once it is authorized. */
  snapshot: {
    version: number;
    digest: string;
    protocolVersion: string;
    takenAt: string;
    tools: string[];
  } | null;
  health: { transport: unknown; credential: unknown };
  /** Why it is not served whatever its state: a platform app holds its name (reserved-names.ts). */
  problem?: ReservedNameProblem;
}

/**
 * A connection as its view: the record, its current snapshot's outline and both loops' last word;
 * `appNames` are the platform apps', whose name a connection is not served under (adr/0128).
 */
export async function viewConnection(
  store: ConnectionStore,
  workspaceId: string,
  name: string,
  appNames: readonly string[],
): Promise<ConnectionView> {
  const record = await store.get(workspaceId, name);
  const [snapshot, transport, credential] = await Promise.all([
    record.snapshotVersion === 0 ? undefined : store.snapshot(workspaceId, name, record.snapshotVersion),
    store.transport(workspaceId, name),
    store.credential(workspaceId, name),
  ]);
  return {
    name: record.name,
    url: shownUrl(record.url),
    auth: authView(record.auth),
    state: deriveState(record, transport, credential, appNames),
    authorizationGeneration: record.authorizationGeneration,
    createdAt: record.createdAt,
    createdBy: record.createdBy,
    snapshot: snapshot
      ? {
          version: snapshot.version,
          digest: snapshot.digest,
          protocolVersion: snapshot.protocolVersion,
          takenAt: snapshot.takenAt,
          tools: snapshot.tools.map((tool) => tool.name),
        }
      : null,
    health: { transport: transport.last ?? null, credential: credential.last ?? null },
  };
}

/** The auth a client sees: the kind and what is not secret (never a credential id or token). */
function authView(auth: StoredAuth): ConnectionView["auth"] {
  if (auth.kind === "static") return { kind: "static", header: auth.header };
  if (auth.kind === "query") return { kind: "query", param: auth.param };
  if (auth.kind === "oauth")
    return { kind: "oauth", scopes: auth.granted ?? auth.scopes, issuer: auth.issuer };
  return { kind: "none" };
}

/**
 * A connection whose record or current snapshot does not parse, looked at alone: said as such,
 * with what an admin and an operator can do, never with the file's path (the log has it).
 */
export class ConnectionDamaged extends AtriumError {
  constructor(name: string) {
    super(
      "connection_damaged",
      500,
      `Connection ${JSON.stringify(name.slice(0, 64))} cannot be read: what this instance stores for it is ` +
        "damaged. An admin can remove it and add it again; an operator can restore it from a backup " +
        "(the instance's log names the file).",
    );
  }
}

/**
 * Where a connection whose record or current snapshot does not parse is met: one damaged file
 * must not fail every listing of the workspace, and must not keep an admin from removing it.
 * Each file is logged once, naming it, not at every look (test/integration/connections-damaged.test.ts).
 */
export class DamagedConnections {
  private readonly logged = new Set<string>();

  constructor(private readonly log: Logger) {}

  /**
   * What `read` answers for each connection of `names` (of `key`, a workspace or a person, in
   * `store`), without those whose files do not parse or are missing and those removed since
   * `names` was listed: a removal at the same moment failed every listing of the workspace, its
   * skills and every client's instructions with a 404 about it. A connection not found is taken
   * as removed only once it has left the store's index; one still there lost a file (deleted by
   * hand, a partial restore), and is left out as damaged and logged, not dropped without a word
   * while its name stays taken (test/unit/platform/connections/connection-view.test.ts).
   */
  async readEach<V>(
    store: Pick<ConnectionStore, "gone">,
    key: string,
    names: readonly string[],
    read: (name: string) => Promise<V>,
  ): Promise<V[]> {
    const answers = await Promise.all(
      names.map((name) =>
        read(name).catch(async (error: unknown) => {
          if (!isNotFound(error)) return this.unreadable(name, error);
          return (await store.gone(key, name)) ? undefined : this.missing(key, name, error);
        }),
      ),
    );
    return answers.filter((one): one is Awaited<V> => one !== undefined);
  }

  /**
   * `undefined` for a file that does not parse (logged once), or a connection already refused as
   * damaged (a personal view reads through the workspace kind's); any other error is thrown on.
   */
  unreadable(name: string, error: unknown): undefined {
    if (error instanceof ConnectionDamaged) return undefined;
    if (!(error instanceof CorruptJson)) throw error;
    if (!this.logged.has(error.path)) {
      this.logged.add(error.path);
      this.log.error(
        { connection: name, path: error.path },
        `connection left out of listings: ${error.message} Restore it from a backup, move the ` +
          "connection's folder out of the data root, or have an admin remove the connection.",
      );
    }
    return undefined;
  }

  /** `undefined` for a connection still indexed whose record or current snapshot is missing (logged once). */
  private missing(key: string, name: string, error: NotFound): undefined {
    const file = `${key}/${name}/${error.code}`;
    if (!this.logged.has(file)) {
      this.logged.add(file);
      this.log.error(
        { key, connection: name, code: error.code },
        `connection left out of listings: ${error.message} Its file is missing while the connection ` +
          "is still there. Restore it from a backup, move the connection's folder out of the data " +
          "root, or have an admin remove the connection.",
      );
    }
    return undefined;
  }

  /** A file that does not parse as ConnectionDamaged (logged once); any other error thrown on. */
  refuse(name: string, error: unknown): never {
    this.unreadable(name, error);
    throw new ConnectionDamaged(name);
  }
}

/** Whether `error` says the connection is not there to read: its record, or its snapshot, not found. */
function isNotFound(error: unknown): error is NotFound {
  return isConnectionNotFound(error) || (error instanceof NotFound && error.code === "snapshot_not_found");
}
