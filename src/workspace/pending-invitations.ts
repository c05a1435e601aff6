import type { UserDirectory } from "../identity/users.ts";
import type { Clock } from "../kernel/clock.ts";
import { readJsonAtBoot } from "../storage/atomic.ts";
import type { KeyedLock } from "../storage/keyed-lock.ts";
import type { StorageLayout } from "../storage/paths.ts";
import { JsonRecords } from "../storage/records.ts";
import { INVITATION_ID, type Invitation, inviteeKey } from "./invitation.ts";
import { InvitationIndex } from "./invitation-index.ts";
import { expiredAt, oldestFirst, senderStandsIn } from "./invitation-standing.ts";
import { keysNaming, membersByKey } from "./invitees.ts";
import type { WorkspaceStore } from "./store.ts";

/** The person an invitation might be for, how the directory knows them, and whether they are still active. */
export type Directory = Pick<UserDirectory, "get" | "findByEmail" | "isDeactivated">;
/** Who is a member of which workspace, and with what role, now. */
export type Memberships = Pick<WorkspaceStore, "get">;

/**
 * The pending invitations: one record each in `invitations/`, and in memory an index of them by
 * invitee, by workspace and by sender, loaded at boot and kept by the writers here, so the two
 * change together. Pending is neither expired nor left without its sender (an active admin of
 * its workspace, ADR 0069). Invitations decides who may send, answer and take back which; the
 * locks are its own, shared here: an id's key around each record's read or delete, and a
 * workspace's key around dropping that workspace's.
 */
export class PendingInvitations {
  private readonly records: JsonRecords<Invitation>;
  private readonly indexed = new InvitationIndex();

  constructor(
    private readonly layout: StorageLayout,
    private readonly locks: KeyedLock,
    private readonly users: Directory,
    private readonly workspaces: Memberships,
    private readonly clock: Clock,
  ) {
    this.records = new JsonRecords(layout, "invitations");
  }

  /**
   * Loads every pending invitation and deletes expired ones, those whose sender no longer stands
   * and those naming a member of their workspace (ADR 0131); at boot (after the workspaces and
   * the directory), and again by housekeeping. Each is read and indexed under its own lock, as
   * an answer or a revoke takes it: read outside it, a record revoked or accepted meanwhile was
   * indexed again and came back. The index ends up holding exactly the ids on disk: one whose
   * file is gone leaves it (test/unit/workspace/invitations.test.ts "housekeeping").
   */
  async load(): Promise<void> {
    const present = new Set<string>();
    for (const id of await this.records.ids()) {
      if (!INVITATION_ID.test(id)) continue;
      present.add(id);
      await this.locks.run(id, () => this.reload(id));
    }
    // Indexed before the listing above was read, so made before it too: gone from disk since.
    for (const id of this.indexed.ids()) {
      if (!present.has(id)) await this.locks.run(id, () => this.reload(id));
    }
    // Then those naming a member, under each workspace's key as `create` takes it: `create`
    // revokes them only where it sends, and in the sender's other workspaces they would count
    // against the sender's bound until this runs.
    for (const workspaceId of this.indexed.workspaceIds()) {
      await this.locks.run(workspaceId, async () =>
        this.dropNamingMembers(workspaceId, await membersByKey(this.users, this.workspaces.get(workspaceId))),
      );
    }
  }

  /** Under the id's lock: the record on disk, indexed if it is pending, forgotten if gone. */
  private async reload(id: string): Promise<void> {
    // Read as boot does: one that does not parse stops the boot named, with what to do.
    const invitation = (await readJsonAtBoot(this.layout.collectionFile("invitations", id))) as
      | Invitation
      | undefined;
    this.indexed.remove(id);
    if (!invitation) return;
    if (!this.live(invitation)) await this.drop(invitation);
    else this.indexed.add(invitation);
  }

  /** The record on disk, not memory: what decides whether an invitation is still there to take. */
  read(id: string): Promise<Invitation | undefined> {
    return this.records.get(id);
  }

  async add(invitation: Invitation): Promise<void> {
    await this.records.put(invitation.id, invitation);
    this.indexed.add(invitation);
  }

  /** A workspace's pending invitations, oldest first. */
  to(workspaceId: string): Invitation[] {
    return this.pending(this.indexed.to(workspaceId));
  }

  /** The pending invitations a person sent, oldest first. */
  sentBy(principalId: string): Invitation[] {
    return this.pending(this.indexed.sentBy(principalId));
  }

  /** The pending invitations naming an invitee (`inviteeKey`), oldest first. */
  naming(key: string): Invitation[] {
    return this.pending(this.indexed.naming(key));
  }

  /** Whether the invitation's sender is still an admin of its workspace, and not deactivated. */
  senderStands(invitation: Pick<Invitation, "workspaceId" | "invitedBy">): boolean {
    return senderStandsIn(this.users, this.workspaces.get(invitation.workspaceId), invitation);
  }

  async drop(invitation: Invitation): Promise<void> {
    await this.records.delete(invitation.id);
    this.indexed.remove(invitation.id);
  }

  /** Every invitation to the workspace that `matches`, pending or not; the caller holds the workspace's key. */
  dropTo(workspaceId: string, matches: (invitation: Invitation) => boolean): Promise<void> {
    return this.dropAll(this.indexed.to(workspaceId), matches);
  }

  /** Every invitation the person sent that `matches`, pending or not; the caller holds the sender's key. */
  dropSentBy(principalId: string, matches: (invitation: Invitation) => boolean): Promise<void> {
    return this.dropAll(this.indexed.sentBy(principalId), matches);
  }

  /**
   * Under the workspace's key: its invitations naming one of `members` (`membersByKey`). No list
   * shows them and accepting one is refused, yet they counted against the bounds, and the admin
   * could revoke one only by an id seen before it was hidden; leaving would revoke it anyway.
   */
  async dropNamingMembers(workspaceId: string, members: Map<string, string>): Promise<void> {
    await this.dropTo(workspaceId, (invitation) => members.has(inviteeKey(invitation.invitee)));
  }

  /** Every pending invitation to the workspace naming the person, by id or by their recorded address. */
  async dropNaming(workspaceId: string, principalId: string): Promise<void> {
    const keys = await keysNaming(this.users, principalId);
    await this.dropTo(workspaceId, (invitation) => keys.has(inviteeKey(invitation.invitee)));
  }

  private async dropAll(
    invitations: Invitation[],
    matches: (invitation: Invitation) => boolean,
  ): Promise<void> {
    for (const { id } of invitations) {
      // As indexed now: one dropped since the list was taken is not dropped twice.
      const invitation = this.indexed.get(id);
      if (invitation && matches(invitation)) await this.locks.run(id, () => this.drop(invitation));
    }
  }

  /** Still pending: neither expired nor left without its sender. */
  private live(invitation: Invitation): boolean {
    return !expiredAt(invitation, this.clock()) && this.senderStands(invitation);
  }

  private pending(invitations: Invitation[]): Invitation[] {
    return invitations.filter((invitation) => this.live(invitation)).sort(oldestFirst);
  }
}
