import { randomBytes } from "node:crypto";
import { isAbsolute, relative, resolve, sep } from "node:path";
import { isPrincipalId, isRecordId, isWorkspaceId } from "../ids.ts";
import { TEMP_PREFIX } from "./atomic.ts";

// The one module that builds storage paths. Every segment is checked against its grammar
// before it touches the filesystem, and every result is checked to lie under the root,
// so no id, subject or name can walk out of its folder (test/unit/paths.test.ts).

export const RESERVED_ROOT_FOLDERS = ["_instance", "_archive"] as const;
export const WORKSPACE_FILE = "workspace.json";

/**
 * A platform app's folder in each workspace (`files`, `notifications`, …): its name is the app's
 * storage partition, lowercase words, never the workspace's own file.
 */
const PARTITION = /^[a-z][a-z0-9-]{0,62}$/;

/** Instance-wide collections of JSON records, each a folder of `<id>.json` under `_instance/`. */
export type InstanceCollection =
  | "sessions"
  | "oauth/clients"
  | "oauth/codes"
  | "oauth/families"
  | "oauth/keys"
  | "oauth/requests"
  | "invitations"
  | "credentials"
  | "connections/registrations"
  | "tasks/schedules"
  | "tasks/running";

/** Instance-wide secrets Atrium generates for itself (never ones an operator configures). */
export type InstanceSecret = "session-secret";

// Record ids are random or digests: base64url or hex, never a name someone typed.
const INSTANCE_RECORD_ID = /^[A-Za-z0-9_-]{8,128}$/;

/** One app's folder of each workspace, and the owner partitions inside it. */
export interface PartitionPaths {
  partition: string;
  dir(workspaceId: string): string;
  ownerDir(workspaceId: string, ownerId: string): string;
  recordDir(workspaceId: string, ownerId: string, recordId: string): string;
  /** `_archive/`, where an archived workspace's folder goes. */
  archiveDir(): string;
  /** Where a path in a workspace's folder went when it was archived (StorageLayout.archivedCopies). */
  archivedCopies(workspaceId: string, path: string, archived: readonly string[]): string[];
}

/** What an archived workspace's folder is renamed to begin with while it is being removed. */
export const PURGING_PREFIX = ".purging-";

const ARCHIVED_NAME = /^(ws_[0-9a-f]{16})-([0-9]{1,16})$/;

/** The workspace and archive instant an `_archive/` entry's name holds, or undefined for any other name. */
export function parseArchivedName(name: string): { workspaceId: string; archivedAtMs: number } | undefined {
  const match = ARCHIVED_NAME.exec(name);
  if (!match) return undefined;
  const workspaceId = match[1] as string;
  const archivedAtMs = Number(match[2]);
  return isWorkspaceId(workspaceId) && Number.isSafeInteger(archivedAtMs)
    ? { workspaceId, archivedAtMs }
    : undefined;
}

export class InvalidPathSegment extends Error {
  constructor(
    readonly kind: string,
    readonly value: string,
  ) {
    super(`Invalid ${kind}: ${JSON.stringify(value.slice(0, 64))}`);
  }
}

export class StorageLayout {
  readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  workspaceDir(workspaceId: string): string {
    return this.within(checkSegment("workspace id", workspaceId, isWorkspaceId));
  }

  workspaceFile(workspaceId: string): string {
    return this.within(this.workspaceDir(workspaceId), WORKSPACE_FILE);
  }

  archiveDir(): string {
    return this.within("_archive");
  }

  archivedWorkspaceDir(workspaceId: string, archivedAtMs: number): string {
    return this.within(
      "_archive",
      `${checkSegment("workspace id", workspaceId, isWorkspaceId)}-${archivedAtMs}`,
    );
  }

  /** `_archive/<name>`, an archived workspace's folder as `_archive/` lists it (`ws_<16 hex>-<ms>`). */
  archivedFolder(name: string): string {
    return this.within("_archive", this.archivedFolderName(name));
  }

  /**
   * Where an archived workspace's folder is moved to be removed (`_archive/.purging-<name>`): out of
   * every listing of archived workspaces at once, so a removal cut short is never half a workspace.
   */
  purgingFolder(name: string): string {
    return this.within("_archive", `${PURGING_PREFIX}${this.archivedFolderName(name)}`);
  }

  private archivedFolderName(name: string): string {
    return checkSegment("archived workspace", name, (v) => parseArchivedName(v) !== undefined);
  }

  /**
   * Where `path`, inside `workspaceId`'s folder, went when the workspace was archived: the same
   * place inside each of `archived` (names listed in `_archive/`) that archivedWorkspaceDir gives
   * this workspace. An id is never reused, so there is at most one unless an operator copied it.
   */
  archivedCopies(workspaceId: string, path: string, archived: readonly string[]): string[] {
    const inside = relative(this.workspaceDir(workspaceId), path);
    if (inside === "" || inside === ".." || inside.startsWith(`..${sep}`) || isAbsolute(inside)) {
      throw new InvalidPathSegment("path inside the workspace", path);
    }
    const prefix = `${workspaceId}-`;
    return archived
      .filter((name) => name.startsWith(prefix) && /^[0-9]+$/.test(name.slice(prefix.length)))
      .map((name) => this.within("_archive", name, inside));
  }

  /** A dot-named folder in the root where a new workspace is assembled before its one rename. */
  stagingDir(workspaceId: string): string {
    const id = checkSegment("workspace id", workspaceId, isWorkspaceId);
    return this.within(`${TEMP_PREFIX}${id}-${randomBytes(4).toString("hex")}`);
  }

  instanceDir(): string {
    return this.within("_instance");
  }

  /** `_instance/instance.lock`: which process holds this root (src/instance/lock.ts). */
  instanceLockFile(): string {
    return this.within("_instance", "instance.lock");
  }

  /** The claim made before removing the stale lock whose bytes digest to `digest`. */
  instanceLockTakeoverFile(digest: string): string {
    const checked = checkSegment("lock digest", digest, (v) => /^[0-9a-f]{32}$/.test(v));
    return this.within("_instance", `instance.lock.takeover-${checked}`);
  }

  /** A unique dot-name a stale lock is moved to, so it can be checked before it is removed. */
  instanceLockAsideFile(): string {
    return this.within("_instance", `${TEMP_PREFIX}instance.lock-${randomBytes(6).toString("hex")}`);
  }

  collectionDir(collection: InstanceCollection): string {
    return this.within("_instance", ...collection.split("/"));
  }

  collectionFile(collection: InstanceCollection, recordId: string): string {
    const id = checkSegment("record id", recordId, (v) => INSTANCE_RECORD_ID.test(v));
    return this.within(this.collectionDir(collection), `${id}.json`);
  }

  instanceSecretFile(name: InstanceSecret): string {
    return this.within("_instance", name);
  }

  /** The folder holding one folder per person (`userDir`); recovery walks it. */
  usersDir(): string {
    return this.within("_instance", "users");
  }

  userDir(principalId: string): string {
    return this.within(this.usersDir(), checkSegment("principal id", principalId, isPrincipalId));
  }

  /** Workspace-scope skills: `<root>/<ws>/skills/<name>/SKILL.md`. */
  workspaceSkillsDir(workspaceId: string): string {
    return this.within(this.workspaceDir(workspaceId), "skills");
  }

  /** User-scope skills: `<root>/_instance/users/<owner>/skills/<name>/SKILL.md`. */
  userSkillsDir(principalId: string): string {
    return this.within(this.userDir(principalId), "skills");
  }

  /** A person's personal connections: `<root>/_instance/users/<owner>/connections/` (ADR 0042). */
  userConnectionsDir(principalId: string): string {
    return this.within(this.userDir(principalId), "connections");
  }

  /** The paths of one partition, checked now so a bad name fails where it is declared. */
  partition(name: string): PartitionPaths {
    checkSegment("storage partition", name, (v) => PARTITION.test(v));
    return {
      partition: name,
      dir: (ws) => this.partitionDir(ws, name),
      ownerDir: (ws, owner) => this.ownerDir(ws, name, owner),
      recordDir: (ws, owner, id) => this.recordDir(ws, name, owner, id),
      archiveDir: () => this.archiveDir(),
      archivedCopies: (ws, path, archived) => this.archivedCopies(ws, path, archived),
    };
  }

  /** `<ws>/<partition>/`: the folder one platform app keeps its records of a workspace in. */
  partitionDir(workspaceId: string, partition: string): string {
    return this.within(
      this.workspaceDir(workspaceId),
      checkSegment("storage partition", partition, (v) => PARTITION.test(v)),
    );
  }

  ownerDir(workspaceId: string, partition: string, ownerId: string): string {
    return this.within(
      this.partitionDir(workspaceId, partition),
      checkSegment("owner", ownerId, isPrincipalId),
    );
  }

  recordDir(workspaceId: string, partition: string, ownerId: string, recordId: string): string {
    return this.within(
      this.ownerDir(workspaceId, partition, ownerId),
      checkSegment("record id", recordId, isRecordId),
    );
  }

  private within(...segments: string[]): string {
    const path = resolve(this.root, ...segments);
    if (path !== this.root && !path.startsWith(this.root + sep)) {
      throw new InvalidPathSegment("path", segments.join("/"));
    }
    return path;
  }
}

function checkSegment(kind: string, value: string, valid: (value: string) => boolean): string {
  if (!valid(value)) throw new InvalidPathSegment(kind, value);
  return value;
}
