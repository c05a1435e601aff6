import { join } from "node:path";
import { Forbidden, InvalidInput, NotFound } from "../../errors.ts";
import { isPrincipalId } from "../../ids.ts";
import type { Clock } from "../../kernel/clock.ts";
import { readJsonIfExists, writeJsonAtomic } from "../../storage/atomic.ts";
import { DiskCache } from "../../storage/disk-cache.ts";
import { KeyedLock } from "../../storage/keyed-lock.ts";
import { makeInPartition } from "../../storage/owned-records.ts";
import type { PartitionPaths } from "../../storage/paths.ts";
import { type RecoveryPass, sweepTempEntries } from "../../storage/recovery.ts";
import type { AccessCheck } from "../../workspace/access-check.ts";
import { begunInCurrentMembership } from "../../workspace/membership-id.ts";
import type { Member } from "../../workspace/model.ts";
import type { WorkspaceStore } from "../../workspace/store.ts";
import { isPersonalConnectionName } from "./personal-name.ts";

const GRANTS_FILE = "grants.json";

/**
 * A workspace admin's leave for one member's personal connection to act in this workspace
 * (ADR 0042). It names the member and the connection as its owner sees it (`my_<name>`) and
 * holds no credential: the admin sees that it exists and who holds it, nothing more.
 */
export interface ConnectionGrant {
  principalId: string;
  connection: string;
  grantedBy: string;
  grantedAt: string;
  /**
   * The id of the holder's membership when it was granted: it counts in that membership only, not
   * one they joined again since. Absent in grants written before it was kept, and for a holder
   * whose membership holds none: judged by `grantedAt` against the member's `addedAt` while the
   * member holds no id, and refused once they hold one (ADR 0169, amended).
   */
  membershipId?: string;
}

/**
 * The grants of each workspace, one file `<ws>/connections/grants.json`. Read-modify-write under a
 * per-workspace lock, always from the file; the in-memory copy is a cache of disk, and a miss
 * rereads the file before it says "no grant" (a grant made behind this process still counts). A
 * read outside the lock that a revoke overtook keeps nothing (DiskCache, ADR 0162): kept, its
 * revoked grant was a cached "yes" that `has` trusted until the next write
 * (test/unit/platform/connections/grants-read-overtaken.test.ts).
 */
export class GrantStore {
  private readonly lock = new KeyedLock();
  private readonly cache = new DiskCache<ConnectionGrant[]>();

  constructor(private readonly storage: Pick<PartitionPaths, "partition" | "dir">) {}

  async list(workspaceId: string): Promise<ConnectionGrant[]> {
    const cached = this.cache.get(workspaceId);
    return cached ?? this.read(workspaceId);
  }

  /**
   * Whether `holder` holds a grant for `connection` made during their current membership: one
   * made before they last joined ended when they left, whether or not the cleanup on leaving
   * (personal.ts watchMembership) has removed it from the file yet.
   */
  async has(workspaceId: string, holder: Member, connection: string): Promise<boolean> {
    const held = (grants: ConnectionGrant[]) =>
      grants.some((g) => isCurrent(g, holder) && g.connection === connection);
    return held(await this.list(workspaceId)) || held(await this.read(workspaceId));
  }

  /**
   * Adds the grant; answers the one already there (and `false`) when `holder` holds it now. One
   * made before the holder last joined no longer counts (`has`), and is replaced by the new one:
   * kept, it would answer "already granted" while every call is refused (the tidy on leaving may
   * never have run; test/unit/platform/connections/grants.test.ts "earlier membership").
   * `admitted` is asked just before the file's rename, as `remove`'s is: whether the granting
   * admin still is one.
   */
  async add(
    workspaceId: string,
    grant: ConnectionGrant,
    holder: Member,
    admitted: AccessCheck,
  ): Promise<{ grant: ConnectionGrant; created: boolean }> {
    return this.lock.run(workspaceId, async () => {
      const grants = await this.read(workspaceId);
      const same = (g: ConnectionGrant) =>
        g.principalId === grant.principalId && g.connection === grant.connection;
      const existing = grants.find((g) => same(g) && isCurrent(g, holder));
      if (existing) return { grant: existing, created: false };
      await this.write(workspaceId, [...grants.filter((g) => !same(g)), grant], admitted);
      return { grant, created: true };
    });
  }

  /** Removes the grants `matches` picks; answers how many went. `admitted` may refuse it, as `add`'s. */
  async remove(
    workspaceId: string,
    matches: (grant: ConnectionGrant) => boolean,
    admitted: AccessCheck,
  ): Promise<number> {
    return this.lock.run(workspaceId, async () => {
      const grants = await this.read(workspaceId);
      const kept = grants.filter((g) => !matches(g));
      if (kept.length !== grants.length) await this.write(workspaceId, kept, admitted);
      return grants.length - kept.length;
    });
  }

  /** R1 in the connections partition's top folder, where the grants file is written. */
  async recoverWorkspace(
    workspaceId: string,
    present: ReadonlySet<string>,
    pass: RecoveryPass,
  ): Promise<void> {
    if (present.has(this.storage.partition)) await sweepTempEntries(this.storage.dir(workspaceId), pass);
  }

  forgetWorkspace(workspaceId: string): void {
    this.cache.delete(workspaceId);
  }

  private read(workspaceId: string): Promise<ConnectionGrant[]> {
    return this.cache.read(workspaceId, async () => {
      const stored = (await readJsonIfExists(this.file(workspaceId))) as
        | { grants?: ConnectionGrant[] }
        | undefined;
      return stored?.grants ?? [];
    });
  }

  private async write(workspaceId: string, grants: ConnectionGrant[], admitted: AccessCheck): Promise<void> {
    // Made through the servers folder so that a workspace whose folder is gone is refused
    // (WorkspaceNotFound) rather than recreated: no write creates a workspace.
    await makeInPartition(join(this.storage.dir(workspaceId), "servers"), workspaceId);
    await this.cache.write(workspaceId, grants, () =>
      writeJsonAtomic(this.file(workspaceId), { grants }, admitted),
    );
  }

  private file(workspaceId: string): string {
    return join(this.storage.dir(workspaceId), GRANTS_FILE);
  }
}

/**
 * What admins and members do with grants. Only a workspace admin grants or revokes; an admin
 * lists every grant, a member their own. A grant may name a connection its holder has not made
 * (yet): the answer is the same whether or not it exists, so granting is no way to learn of one.
 */
export class Grants {
  constructor(
    private readonly store: GrantStore,
    private readonly workspaces: Pick<WorkspaceStore, "roleOf" | "get">,
    private readonly clock: Clock,
  ) {}

  /** The grants in force: each holder still a member since it was made. */
  async list(workspaceId: string, callerId: string): Promise<ConnectionGrant[]> {
    const members = this.workspaces.get(workspaceId)?.members ?? [];
    const grants = (await this.store.list(workspaceId)).filter((g) => members.some((m) => isCurrent(g, m)));
    if (this.workspaces.roleOf(workspaceId, callerId) === "admin") return grants;
    return grants.filter((g) => g.principalId === callerId);
  }

  async grant(
    workspaceId: string,
    adminId: string,
    request: { principalId?: unknown; connection?: unknown },
  ): Promise<{ grant: ConnectionGrant; created: boolean }> {
    this.requireAdmin(workspaceId, adminId);
    const holder = this.checkMember(workspaceId, request.principalId);
    const connection = checkGrantConnection(request.connection);
    return this.store.add(
      workspaceId,
      {
        principalId: holder.principalId,
        connection,
        grantedBy: adminId,
        grantedAt: new Date(this.clock()).toISOString(),
        ...(holder.membershipId === undefined ? {} : { membershipId: holder.membershipId }),
      },
      holder,
      // Again at the write's commit: an admin demoted while it waited on the lock or the disk
      // grants nothing (adr/0154, amended; test/integration/grants-after-demotion.test.ts).
      () => this.requireAdmin(workspaceId, adminId),
    );
  }

  async revoke(workspaceId: string, adminId: string, principalId: string, connection: string): Promise<void> {
    this.requireAdmin(workspaceId, adminId);
    const removed = await this.store.remove(
      workspaceId,
      (g) => g.principalId === principalId && g.connection === connection,
      () => this.requireAdmin(workspaceId, adminId),
    );
    if (removed === 0) {
      throw new NotFound(
        "grant_not_found",
        "No such grant in this workspace: list the grants (GET …/connections/grants) for the holder and connection.",
      );
    }
  }

  private checkMember(workspaceId: string, principalId: unknown): Member {
    if (typeof principalId !== "string" || !isPrincipalId(principalId)) {
      throw new InvalidInput(
        '"principalId" is the member\'s principal id (usr_ + 24 hex), as GET …/members lists it.',
      );
    }
    const member = this.workspaces.get(workspaceId)?.members.find((m) => m.principalId === principalId);
    if (!member) {
      throw new InvalidInput(
        "That person is not a member of this workspace: a grant is for a member's own connection; invite them first.",
      );
    }
    return member;
  }

  private requireAdmin(workspaceId: string, principalId: string): void {
    if (this.workspaces.roleOf(workspaceId, principalId) !== "admin") {
      throw new Forbidden("Only a workspace admin can grant or revoke the use of personal connections here.");
    }
  }
}

/**
 * A grant counts for `member` when it is theirs and was made in their current membership: by its
 * id, so a member added just before a clock step back is not refused their grant until the clock
 * passes `addedAt` (test/unit/platform/connections/grants-membership-id.test.ts).
 */
function isCurrent(grant: ConnectionGrant, member: Member): boolean {
  return (
    grant.principalId === member.principalId &&
    begunInCurrentMembership(member, {
      at: Date.parse(grant.grantedAt),
      membershipId: grant.membershipId,
    })
  );
}

function checkGrantConnection(connection: unknown): string {
  if (typeof connection !== "string" || !isPersonalConnectionName(connection)) {
    throw new InvalidInput(
      '"connection" is the personal connection\'s source name as its owner sees it, "my_" and its name (e.g. "my_notes").',
    );
  }
  return connection;
}
