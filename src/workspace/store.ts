import { readFileSync } from "node:fs";
import { mkdir, readdir, readFile, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { BootError, Conflict, NotFound, WorkspaceNotFound } from "../errors.ts";
import { isWorkspaceId, newWorkspaceId } from "../ids.ts";
import { MAX_ADMINISTERED_WORKSPACES_DEFAULT } from "../instance/schema.ts";
import { type Clock, systemClock } from "../kernel/clock.ts";
import type { AtriumEvent, EventPublisher } from "../kernel/events.ts";
import { syncDir, writeJsonAtomic } from "../storage/atomic.ts";
import { FOLDER_MODE, makeFolderIfMissing, makeRootIfMissing } from "../storage/folders.ts";
import { KeyedLock } from "../storage/keyed-lock.ts";
import { RESERVED_ROOT_FOLDERS, type StorageLayout, WORKSPACE_FILE } from "../storage/paths.ts";
import { assertMayCreate } from "./creation-limit.ts";
import { admissionTo, requireAdmin } from "./gate.ts";
import { newMembershipId } from "./membership-id.ts";
import { type Member, roleIn, type Workspace, type WorkspaceRole } from "./model.ts";
import { checkName, checkRecord, corrupt } from "./workspace-record.ts";

/**
 * What else ends when a person stops being a member: the pending invitations to the workspace
 * naming them (`Invitations.leave`, ADR 0131). `leave` runs the removal (`remove`) holding what
 * orders it against an acceptance, and hands it `endInvitations`, which the removal calls under
 * its own lock once its checks pass and before its write: a revocation that fails leaves the
 * person a member, to be removed again, never out with an invitation back in. Declared here so
 * that the store imports nothing of invitations; server.ts hands them over once both exist
 * (`endsWithMembership`).
 */
export interface Departures {
  leave<T>(
    workspaceId: string,
    principalId: string,
    remove: (endInvitations: () => Promise<void>) => Promise<T>,
  ): Promise<T>;
}

/** A store given no invitations (a unit test's) has none to end. */
const NOTHING_ELSE_ENDS: Departures = {
  leave: (_workspaceId, _principalId, remove) => remove(async () => undefined),
};

/**
 * The workspaces of one instance. The in-memory index (and the index by member) is loaded
 * at boot and kept current by the writers, so a request never lists or parses the disk.
 * Every change to one workspace runs under its lock, rereads workspace.json and is written
 * atomically before the index moves (adr/0025).
 */
export class WorkspaceStore {
  private readonly index = new Map<string, Workspace>();
  /** Principal id → the ids of the workspaces listing them, so `listFor` never scans. */
  private readonly byMember = new Map<string, Set<string>>();
  private readonly locks = new KeyedLock();
  private departures: Departures = NOTHING_ELSE_ENDS;

  constructor(
    private readonly layout: StorageLayout,
    private readonly events: EventPublisher,
    private readonly clock: Clock = systemClock,
    /** `workspaces.maxAdministeredPerPerson`: how many a person may administer and create another. */
    private readonly maxToCreate = MAX_ADMINISTERED_WORKSPACES_DEFAULT,
  ) {}

  /**
   * Every removal, whoever asks it of the store (a route, leaving, a test), ends the person's
   * invitations to the workspace this way (test/unit/workspace/store-departures.test.ts).
   */
  endsWithMembership(departures: Departures): void {
    this.departures = departures;
  }

  /** Reads every workspace under the root. Anything that is not a workspace or reserved stops boot. */
  async load(): Promise<void> {
    // A root Atrium creates is its alone, like every folder in it.
    await makeRootIfMissing(this.layout.root);
    const entries = await readdir(this.layout.root, { withFileTypes: true });
    const ids: string[] = [];
    for (const entry of entries) {
      // Dot-entries are writers' temp files and the repository's .gitkeep; nothing reads them.
      if (entry.name.startsWith(".")) continue;
      if ((RESERVED_ROOT_FOLDERS as readonly string[]).includes(entry.name) && entry.isDirectory()) continue;
      if (!isWorkspaceId(entry.name) || !entry.isDirectory()) {
        throw new BootError(
          `Unexpected ${entry.isDirectory() ? "folder" : "file"} "${entry.name}" in the data root ${this.layout.root}: ` +
            `it holds only workspace folders (ws_ + 16 hex) and ${RESERVED_ROOT_FOLDERS.join(", ")}. Move it out of the root.`,
        );
      }
      ids.push(entry.name);
    }
    // Read synchronously: before Atrium listens nothing else waits on the event loop, and a
    // small file costs ~15 µs this way against ~140 µs through the thread pool (10,000
    // workspace.json files: 0.13–0.18 s against 1.4 s with 64 in flight; adr/0025).
    for (const id of ids) {
      const path = this.layout.workspaceFile(id);
      let text: string;
      try {
        text = readFileSync(path, "utf8");
      } catch (error) {
        throw corrupt(id, path, error);
      }
      this.remember(checkRecord(id, path, text));
    }
  }

  /** The ids of every live workspace, for walks over the root (recovery). */
  ids(): string[] {
    return [...this.index.keys()];
  }

  /**
   * One workspace.json, checked. `missing` says what its absence means to the caller: at boot
   * a folder without its record is corruption; to a writer, the workspace is gone.
   */
  private async readWorkspace(id: string): Promise<Workspace> {
    const path = this.layout.workspaceFile(id);
    let text: string;
    try {
      text = await readFile(path, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") throw new WorkspaceNotFound(id);
      throw corrupt(id, path, error);
    }
    return checkRecord(id, path, text);
  }

  get(id: string): Workspace | undefined {
    return isWorkspaceId(id) ? this.index.get(id) : undefined;
  }

  roleOf(id: string, principalId: string): WorkspaceRole | undefined {
    return roleIn(this.get(id), principalId);
  }

  /** `principalId`'s membership of the workspace, as the index holds it; undefined for none. */
  memberOf(id: string, principalId: string): Member | undefined {
    return this.get(id)?.members.find((member) => member.principalId === principalId);
  }

  listFor(principalId: string): Workspace[] {
    const mine: Workspace[] = [];
    for (const id of this.byMember.get(principalId) ?? []) {
      const ws = this.index.get(id);
      if (ws) mine.push(ws);
    }
    return mine.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  }

  /**
   * The only way a workspace comes into being. The folder appears whole, by one rename. Under the
   * creator's lock, so two creates racing for a person's last place cannot both take it.
   */
  async create(name: string, creatorId: string): Promise<Workspace> {
    const checked = checkName(name);
    return this.locks.run(creatorId, async () => {
      assertMayCreate(this.listFor(creatorId), creatorId, this.maxToCreate);
      return this.createNow(checked, creatorId);
    });
  }

  private async createNow(name: string, creatorId: string): Promise<Workspace> {
    const now = this.isoNow();
    const ws: Workspace = {
      id: newWorkspaceId(),
      name,
      createdAt: now,
      updatedAt: now,
      members: [{ principalId: creatorId, role: "admin", addedAt: now, membershipId: newMembershipId() }],
    };
    const staging = this.layout.stagingDir(ws.id);
    await mkdir(staging, { mode: FOLDER_MODE });
    let placed = false;
    try {
      await writeJsonAtomic(join(staging, WORKSPACE_FILE), ws);
      await rename(staging, this.layout.workspaceDir(ws.id));
      placed = true;
      await syncDir(this.layout.root);
    } catch (error) {
      // Not flushed, so not created: out of the root before the creator is told, or the next boot
      // would serve a workspace answered as failed. A move back that fails too leaves the folder,
      // and the create happens after all, answered with the flush's error (adr/0112).
      if (placed) await rename(this.layout.workspaceDir(ws.id), staging).catch(() => undefined);
      await rm(staging, { recursive: true, force: true });
      throw error;
    }
    this.remember(ws);
    return ws;
  }

  /*
   * The writes below are made on behalf of `by`, whom the gate admitted before the lock was
   * free: each asks the gate's question again of the workspace it is about to write, under its
   * lock, so an actor demoted or removed while it waited is refused as if it came after
   * (adr/0129, amended; test/integration/store-writes-recheck.test.ts).
   */

  async rename(id: string, name: string, by: string): Promise<Workspace> {
    const checked = checkName(name);
    return this.mutate(id, undefined, (ws) => {
      requireAdmin(admissionTo(ws, id, by));
      return { ...ws, name: checked };
    });
  }

  /**
   * Archiving moves the folder under `_archive/`, so nothing can address it any more. The index
   * forgets it once the rename has landed, before the flushes: one of them failing left it indexed
   * with its folder gone, the gate admitting its members and a refresh of their grants passing
   * until a later write found it missing (test/integration/archive-unflushed-write.test.ts).
   */
  async archive(id: string, by: string): Promise<void> {
    await this.locks.run(id, async () => {
      requireAdmin(admissionTo(await this.readToArchive(id), id, by));
      await makeFolderIfMissing(this.layout.archiveDir());
      await rename(this.layout.workspaceDir(id), this.layout.archivedWorkspaceDir(id, this.clock()));
      this.forget(id);
      await syncDir(this.layout.root);
      await syncDir(this.layout.archiveDir());
    });
  }

  /**
   * The workspace as the file holds it, as the other writes read it under this lock. One whose
   * workspace.json does not read (corrupt, gone, a read error) is still archivable, by an admin
   * the index lists: no write through the store can land on a file it cannot read, so the index
   * is the last membership written, and archiving is how its admins are rid of it.
   */
  private async readToArchive(id: string): Promise<Workspace | undefined> {
    try {
      return await this.readWorkspace(id);
    } catch {
      return this.get(id);
    }
  }

  /**
   * `admissible` is asked of the workspace as this write reads it, under its lock, and refuses by
   * throwing: an invitation's acceptance checks there that its sender is still an admin, so a
   * removal of the sender cannot land between that check and this write.
   */
  addMember(
    id: string,
    principalId: string,
    role: WorkspaceRole,
    admissible: (ws: Workspace) => void = () => undefined,
  ): Promise<Workspace> {
    const added = { type: "member.added", workspaceId: id, principalId, role } as const;
    return this.mutate(id, added, (ws) => {
      admissible(ws);
      if (roleIn(ws, principalId) !== undefined) {
        throw new Conflict("member_exists", "That person is already a member; change their role instead.");
      }
      // A join draws a new membership id, in this same write: one the person left and this one
      // are told apart by it, whatever the clock read at each (ADR 0169, amended).
      const member: Member = { principalId, role, addedAt: this.isoNow(), membershipId: newMembershipId() };
      return { ...ws, members: [...ws.members, member] };
    });
  }

  /**
   * Anyone may leave (`by` is the person); removing someone else takes an admin. The person's
   * pending invitations to the workspace end before the membership's write (`Departures`,
   * ADR 0131): while they are a member those invitations are of no use to anyone, and once the
   * write lands none is left, even when the write then throws and its retry is member_not_found
   * (test/unit/workspace/store-departures.test.ts).
   */
  removeMember(id: string, principalId: string, by: string): Promise<Workspace> {
    const removed = { type: "member.removed", workspaceId: id, principalId } as const;
    return this.departures.leave(id, principalId, (endInvitations) =>
      this.mutate(id, removed, async (ws) => {
        const actor = admissionTo(ws, id, by);
        if (principalId !== by) requireAdmin(actor);
        const member = findMember(ws, principalId);
        if (member.role === "admin") assertAnotherAdmin(ws, principalId);
        await endInvitations();
        return { ...ws, members: ws.members.filter((m) => m.principalId !== principalId) };
      }),
    );
  }

  setRole(id: string, principalId: string, role: WorkspaceRole, by: string): Promise<Workspace> {
    return this.mutate(id, undefined, (ws) => {
      requireAdmin(admissionTo(ws, id, by));
      const member = findMember(ws, principalId);
      if (member.role === "admin" && role !== "admin") assertAnotherAdmin(ws, principalId);
      return { ...ws, members: ws.members.map((m) => (m.principalId === principalId ? { ...m, role } : m)) };
    });
  }

  /**
   * Read-modify-write from the file, never from memory: the index is a cache of disk, and
   * writing it over workspace.json would undo a change made behind it (issue 16;
   * test/unit/workspace/store.test.ts "mutate rereads"). A workspace whose file is gone is gone.
   * `event` is published once the change is on disk, still under the lock, so events about
   * one workspace come in the order its writes happened; a refused change publishes nothing.
   */
  private mutate(
    id: string,
    event: AtriumEvent | undefined,
    change: (ws: Workspace) => Workspace | Promise<Workspace>,
  ): Promise<Workspace> {
    return this.locks.run(id, async () => {
      if (!this.get(id)) throw new WorkspaceNotFound(id);
      let current: Workspace;
      try {
        current = await this.readWorkspace(id);
      } catch (error) {
        if (error instanceof WorkspaceNotFound) this.forget(id);
        throw error;
      }
      const next = { ...(await change(current)), updatedAt: this.isoNow() };
      try {
        await writeJsonAtomic(this.layout.workspaceFile(id), next);
      } catch (error) {
        await this.rememberDisk(id, next, event);
        throw error;
      }
      this.remember(next);
      if (event) this.events.publish(event);
      return next;
    });
  }

  /**
   * After a write that threw, the index takes what workspace.json holds. The write may have
   * landed: the new file renamed into place, then the folder's flush failed. Every later write
   * reads that file, so the gate, which reads the index, must too; kept as it was, it admitted a
   * removed member until a restart, and refused one who had joined
   * (test/unit/workspace/store-unflushed-write.test.ts). A change that landed is published too.
   * A file that cannot be read now leaves the index as it was; one that is gone, forgotten.
   */
  private async rememberDisk(id: string, next: Workspace, event: AtriumEvent | undefined): Promise<void> {
    let onDisk: Workspace;
    try {
      onDisk = await this.readWorkspace(id);
    } catch (error) {
      if (error instanceof WorkspaceNotFound) this.forget(id);
      return;
    }
    this.remember(onDisk);
    if (event && JSON.stringify(onDisk) === JSON.stringify(next)) this.events.publish(event);
  }

  private isoNow(): string {
    return new Date(this.clock()).toISOString();
  }

  /** Puts a workspace in both indexes, dropping member entries it no longer lists. */
  private remember(ws: Workspace): void {
    const previous = this.index.get(ws.id);
    for (const member of previous?.members ?? []) this.byMember.get(member.principalId)?.delete(ws.id);
    this.index.set(ws.id, ws);
    for (const member of ws.members) {
      let ids = this.byMember.get(member.principalId);
      if (!ids) {
        ids = new Set();
        this.byMember.set(member.principalId, ids);
      }
      ids.add(ws.id);
    }
    for (const member of previous?.members ?? []) {
      if (this.byMember.get(member.principalId)?.size === 0) this.byMember.delete(member.principalId);
    }
  }

  private forget(id: string): void {
    for (const member of this.index.get(id)?.members ?? []) {
      const ids = this.byMember.get(member.principalId);
      ids?.delete(id);
      if (ids?.size === 0) this.byMember.delete(member.principalId);
    }
    this.index.delete(id);
  }
}

function findMember(ws: Workspace, principalId: string): Member {
  const member = ws.members.find((m) => m.principalId === principalId);
  if (!member) throw new NotFound("member_not_found", "That person is not a member of this workspace.");
  return member;
}

function assertAnotherAdmin(ws: Workspace, principalId: string): void {
  if (!ws.members.some((m) => m.role === "admin" && m.principalId !== principalId)) {
    throw new Conflict("last_admin", "A workspace keeps at least one admin: make someone else admin first.");
  }
}
