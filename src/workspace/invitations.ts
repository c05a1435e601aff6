import { Forbidden, NotFound } from "../errors.ts";
import type { UserDirectory } from "../identity/users.ts";
import { type Clock, systemClock } from "../kernel/clock.ts";
import type { Logger } from "../log.ts";
import { readJsonAtBoot } from "../storage/atomic.ts";
import { KeyedLock } from "../storage/keyed-lock.ts";
import type { StorageLayout } from "../storage/paths.ts";
import { JsonRecords } from "../storage/records.ts";
import { INVITATION_ID, type Invitation, type Invitee, inviteeKey, newInvitationId } from "./invitation.ts";
import { refuseBeyondBounds } from "./invitation-bounds.ts";
import { InvitationIndex } from "./invitation-index.ts";
import { expiredAt, oldestFirst, senderStandsIn } from "./invitation-standing.ts";
import { isFor, keysNaming, membersByKey, ownsEmail, recordedEmail, refuseMember } from "./invitees.ts";
import { roleIn, type Workspace, type WorkspaceRole } from "./model.ts";
import type { WorkspaceStore } from "./store.ts";

/** How long an invitation waits for its answer. Long enough for a holiday, short enough to go stale. */
export const INVITATION_TTL_MS = 14 * 24 * 60 * 60 * 1000;
/** The person an invitation might be for, how the directory knows them, and whether they are still active. */
type Directory = Pick<UserDirectory, "get" | "findByEmail" | "isDeactivated">;
/** Who is a member of which workspace, and with what role, now. */
type Memberships = Pick<WorkspaceStore, "get">;

/**
 * Invitations to join a workspace. Joining takes the invitee's own acceptance, and creating
 * one never looks the invitee up in the user directory (only the workspace's own members are
 * read), so its answer cannot tell whether the address or id belongs to anyone (ADR 0027).
 * Pending invitations are held in memory, indexed by invitee, by workspace and by sender,
 * loaded at boot and kept by the writers; answering one rereads it from disk
 * under its lock, so it is taken at most once. An answered, revoked or expired one is deleted.
 *
 * An invitation speaks for its sender only while the sender is an active admin of its
 * workspace: once they are removed, demoted, gone or deactivated it is neither listed nor
 * answerable, and answering it deletes it (ADR 0069). Otherwise an admin could invite an
 * account of theirs, be removed, and come back as admin by accepting.
 *
 * One person may be named by two invitations to a workspace, by id and by address; neither
 * outlives their membership: accepting one drops the other, and so does their leaving or
 * removal, neither list shows one naming a member nor does either bound count it, and sending an
 * invitation or housekeeping revokes those (ADR 0131).
 */
export class Invitations {
  private readonly records: JsonRecords<Invitation>;
  private readonly locks = new KeyedLock();
  private readonly indexed = new InvitationIndex();
  private readonly clock: Clock;

  constructor(
    private readonly layout: StorageLayout,
    private readonly users: Directory,
    private readonly workspaces: Memberships,
    /** Where a clean-up after a join that failed is told (`endAfterJoining`). */
    private readonly log: Logger,
    clock?: Clock,
  ) {
    this.records = new JsonRecords(layout, "invitations");
    this.clock = clock ?? systemClock;
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

  /**
   * Refused (403) when the sender is not, by the time it holds the locks, an active admin of the
   * workspace: the gate admitted them before, and a demotion, removal or deactivation can land
   * in between. Refused (409) when the invitee is a member already (`member_exists`) or already
   * has a pending invitation to this workspace (`invitation_exists`), and past either bound
   * (`too_many_invitations`). The workspace's invitations naming a member are revoked first, so
   * its bound counts what its list shows; the sender's counts what their lists show (ADR 0131).
   */
  async create(
    workspaceId: string,
    invitee: Invitee,
    role: WorkspaceRole,
    invitedBy: string,
  ): Promise<Invitation> {
    // Under the workspace's key, then the sender's (always in that order), so two invitations
    // at once can neither both squeeze past a bound nor both be the invitee's one, and so a
    // revokeSentBy or revokeAll, which take one of these keys too, never runs while one is being
    // written: it either finds it indexed or finds it refused below.
    return this.locks.run(workspaceId, () =>
      this.locks.run(invitedBy, async () => {
        // Members are read under the workspace's key, which an acceptance holds until its member
        // is added: read before it, an invitation sent while its invitee's acceptance committed
        // was written once they had joined, listed nowhere yet counted (ADR 0069, 0131; the unit
        // test "while its invitee's acceptance commits", invitations-one-person.test.ts).
        const members = await membersByKey(this.users, this.workspaces.get(workspaceId));
        refuseMember(members, invitee, invitedBy);
        // Checked here, not only at the gate: an invitation written after its sender lost the
        // role would be missed by their revokeSentBy, hidden while they lack it and live again
        // once it came back (test/unit/workspace/invitations.test.ts "in flight"; ADR 0069).
        if (!this.senderStands({ workspaceId, invitedBy })) {
          throw new Forbidden("Only an active admin of this workspace can invite; you are no longer one.");
        }
        await this.dropNamingMembers(workspaceId, members);
        await refuseBeyondBounds(
          invitee,
          this.pending(this.indexed.to(workspaceId)),
          this.pending(this.indexed.sentBy(invitedBy)),
          (id) => membersByKey(this.users, this.workspaces.get(id)),
        );
        const now = this.clock();
        const invitation: Invitation = {
          id: newInvitationId(),
          workspaceId,
          invitee,
          role,
          invitedBy,
          createdAt: new Date(now).toISOString(),
          expiresAt: new Date(now + INVITATION_TTL_MS).toISOString(),
        };
        await this.records.put(invitation.id, invitation);
        this.indexed.add(invitation);
        return invitation;
      }),
    );
  }

  /**
   * A workspace's pending invitations, oldest first, but none naming a member (by id, or by an
   * address the directory records for one): accepting it is refused, and it goes when they leave,
   * when the workspace's next invitation is sent, or at housekeeping. One may be left from before
   * ADR 0131, or name an address its member signed in with later.
   */
  async forWorkspace(workspaceId: string): Promise<Invitation[]> {
    const members = await membersByKey(this.users, this.workspaces.get(workspaceId));
    return this.pending(this.indexed.to(workspaceId)).filter(
      (invitation) => !members.has(inviteeKey(invitation.invitee)),
    );
  }

  /**
   * The pending invitations a person may answer: those naming their id, and those naming an
   * email the directory records for them alone (a verified one: the directory keeps no
   * other, and an address two people signed in with names neither). None to a workspace they
   * are a member of, for the reason `forWorkspace` gives.
   */
  async forPerson(principalId: string): Promise<Invitation[]> {
    const mine = this.pending(this.indexed.naming(inviteeKey({ principalId })));
    const email = await recordedEmail(this.users, principalId);
    if (email) {
      const byEmail = this.pending(this.indexed.naming(inviteeKey({ email })));
      if (byEmail.length > 0 && (await ownsEmail(this.users, principalId, email))) mine.push(...byEmail);
    }
    return mine
      .filter((invitation) => roleIn(this.workspaces.get(invitation.workspaceId), principalId) === undefined)
      .sort(oldestFirst);
  }

  /**
   * The person accepts one of their invitations (`answer`, `join` adding them), and every other
   * pending one to the workspace naming them, by id or by their recorded address, goes with it:
   * left, it let them leave, or be removed, and come back with its role (ADR 0131;
   * test/integration/invitations-one-person.test.ts). Under the workspace's key, before the
   * invitation's as `revokeAll` takes them, and held by `leave` too: two acceptances for one
   * person, or an acceptance and their removal, run one after the other. Once `join` has
   * succeeded its result is the answer (`endAfterJoining`).
   */
  async accept<T>(
    id: string,
    principalId: string,
    join: (invitation: Invitation, senderStands: (workspace: Workspace) => void) => Promise<T>,
  ): Promise<T> {
    if (!INVITATION_ID.test(id)) throw notFound();
    // Read only to learn which workspace's key to take; `answer` reads it again under its own.
    const workspaceId = (await this.records.get(id))?.workspaceId;
    if (workspaceId === undefined) throw notFound();
    const ended = (end: () => Promise<void>) => this.endAfterJoining(workspaceId, principalId, end);
    return this.locks.run(workspaceId, async () => {
      const joined = await this.answer(id, principalId, join, (invitation) =>
        ended(() => this.drop(invitation)),
      );
      await ended(() => this.dropNaming(workspaceId, principalId));
      return joined;
    });
  }

  /** The person declines one of their invitations; any other naming them stays theirs to answer. */
  async decline(id: string, principalId: string): Promise<void> {
    await this.answer(
      id,
      principalId,
      async () => undefined,
      (invitation) => this.drop(invitation),
    );
  }

  /**
   * Once the person has joined, the invitation answered and their others there end. They are a
   * member, what they asked for, so a failure here is logged, never answered (ADR 0138): what it
   * leaves names a member, so no list shows it, accepting it is `409 member_exists`, and their
   * leaving or housekeeping (`load`) revokes it. Ids and the error only are logged, no record.
   */
  private async endAfterJoining(workspaceId: string, principalId: string, end: () => Promise<void>) {
    try {
      await end();
    } catch (error) {
      this.log.warn(
        { workspaceId, principalId, err: error },
        "a person joined a workspace, but ending their other invitations to it failed; housekeeping revokes them",
      );
    }
  }

  /**
   * The person stops being a member (removed, or leaving): `remove` takes them out, calling the
   * `endInvitations` it is given (every pending invitation to the workspace naming them, ADR 0131)
   * after its checks and before its write, so a revocation that fails leaves them a member, whose
   * invitations nobody can accept (revoked after the write, its failure left them out, the retry
   * member_not_found, the leftover theirs to accept). Under the workspace's key, as `accept` holds
   * it: an acceptance lands before the removal, and is undone by it, or after, and finds its
   * invitation gone. Keys go: this one, the store's lock, each invitation's; `accept` takes an
   * invitation's and then the store's only inside this one. `WorkspaceStore.removeMember` runs
   * every removal through this (test/unit/workspace/store-departures.test.ts).
   */
  async leave<T>(
    workspaceId: string,
    principalId: string,
    remove: (endInvitations: () => Promise<void>) => Promise<T>,
  ): Promise<T> {
    return this.locks.run(workspaceId, () => remove(() => this.dropNaming(workspaceId, principalId)));
  }

  /**
   * Answers one of the person's invitations: `join` runs first (for an acceptance, adding the
   * member), and only when it succeeds is the invitation deleted (`dropAnswered`). An id that is unknown,
   * expired, or someone else's is the same 404; so is one whose sender is no longer an active
   * admin of the workspace, checked now, at the answer, and deleted
   * (test/integration/invitations.test.ts "sender"). `join` is also given that check to run
   * against the workspace as its own write reads it (WorkspaceStore.addMember's `admissible`):
   * the sender's removal landing after the first check still refuses the acceptance.
   */
  private async answer<T>(
    id: string,
    principalId: string,
    join: (invitation: Invitation, senderStands: (workspace: Workspace) => void) => Promise<T>,
    dropAnswered: (invitation: Invitation) => Promise<void>,
  ): Promise<T> {
    if (!INVITATION_ID.test(id)) throw notFound();
    return this.locks.run(id, async () => {
      // Reread: the record on disk, not memory, decides whether it is still there to take.
      const invitation = await this.records.get(id);
      if (
        !invitation ||
        expiredAt(invitation, this.clock()) ||
        !(await isFor(this.users, invitation, principalId))
      ) {
        throw notFound();
      }
      if (!this.senderStands(invitation)) {
        await this.drop(invitation);
        throw notFound();
      }
      let senderGone = false;
      const senderStands = (workspace: Workspace) => {
        if (senderStandsIn(this.users, workspace, invitation)) return;
        senderGone = true;
        throw notFound();
      };
      let result: T;
      try {
        result = await join(invitation, senderStands);
      } catch (error) {
        if (senderGone) await this.drop(invitation);
        throw error;
      }
      await dropAnswered(invitation);
      return result;
    });
  }

  /** An admin takes back one of their workspace's invitations. */
  async revoke(workspaceId: string, id: string): Promise<void> {
    if (!INVITATION_ID.test(id)) throw notFound();
    await this.locks.run(id, async () => {
      const invitation = await this.records.get(id);
      if (!invitation || invitation.workspaceId !== workspaceId) throw notFound();
      await this.drop(invitation);
    });
  }

  /**
   * Every invitation to a workspace that is going away (archive). Under the workspace's key, as
   * `create` takes it, so one being written is either indexed by now or refused, the workspace gone.
   */
  async revokeAll(workspaceId: string): Promise<void> {
    await this.locks.run(workspaceId, () => this.dropAll(this.indexed.to(workspaceId), () => true));
  }

  /**
   * Every invitation `principalId` sent to `workspaceId`, or to any workspace when it is
   * not given: they stopped being its admin (removed, demoted, left), or were deactivated.
   * An invitation lives no longer than its sender's role, even if the role comes back. Under the
   * sender's key, as `create` takes it: called once the role is gone, it waits for an invitation
   * being written meanwhile and takes it back, and any later one is refused by `create`.
   */
  async revokeSentBy(principalId: string, workspaceId?: string): Promise<void> {
    await this.locks.run(principalId, () =>
      this.dropAll(
        this.indexed.sentBy(principalId),
        (invitation) => workspaceId === undefined || invitation.workspaceId === workspaceId,
      ),
    );
  }

  /**
   * Under the workspace's key: its invitations naming one of `members` (`membersByKey`). No list
   * shows them and accepting one is refused, yet they counted against the bounds, and the admin
   * could revoke one only by an id seen before it was hidden; leaving would revoke it anyway.
   */
  private async dropNamingMembers(workspaceId: string, members: Map<string, string>): Promise<void> {
    await this.dropAll(this.indexed.to(workspaceId), (invitation) =>
      members.has(inviteeKey(invitation.invitee)),
    );
  }

  /** Every pending invitation to the workspace naming the person, by id or by their recorded address. */
  private async dropNaming(workspaceId: string, principalId: string): Promise<void> {
    const keys = await keysNaming(this.users, principalId);
    await this.dropAll(this.indexed.to(workspaceId), (invitation) =>
      keys.has(inviteeKey(invitation.invitee)),
    );
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

  /** Whether the invitation's sender is still an admin of its workspace, and not deactivated. */
  private senderStands(invitation: Pick<Invitation, "workspaceId" | "invitedBy">): boolean {
    return senderStandsIn(this.users, this.workspaces.get(invitation.workspaceId), invitation);
  }

  /** Still pending: neither expired nor left without its sender. */
  private live(invitation: Invitation): boolean {
    return !expiredAt(invitation, this.clock()) && this.senderStands(invitation);
  }

  private pending(invitations: Invitation[]): Invitation[] {
    return invitations.filter((invitation) => this.live(invitation)).sort(oldestFirst);
  }

  private async drop(invitation: Invitation): Promise<void> {
    await this.records.delete(invitation.id);
    this.indexed.remove(invitation.id);
  }
}

function notFound(): NotFound {
  return new NotFound(
    "invitation_not_found",
    "No pending invitation for you with that id; it may have expired.",
  );
}
