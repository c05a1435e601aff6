import { Forbidden, NotFound } from "../errors.ts";
import { type Clock, systemClock } from "../kernel/clock.ts";
import type { Logger } from "../log.ts";
import { KeyedLock } from "../storage/keyed-lock.ts";
import type { StorageLayout } from "../storage/paths.ts";
import { INVITATION_ID, type Invitation, type Invitee, inviteeKey, newInvitationId } from "./invitation.ts";
import { refuseBeyondBounds } from "./invitation-bounds.ts";
import { expiredAt, oldestFirst, senderStandsIn } from "./invitation-standing.ts";
import { isFor, membersByKey, ownsEmail, recordedEmail, refuseMember } from "./invitees.ts";
import { roleIn, type Workspace, type WorkspaceRole } from "./model.ts";
import { type Directory, type Memberships, PendingInvitations } from "./pending-invitations.ts";

/** How long an invitation waits for its answer. Long enough for a holiday, short enough to go stale. */
export const INVITATION_TTL_MS = 14 * 24 * 60 * 60 * 1000;

/**
 * Invitations to join a workspace. Joining takes the invitee's own acceptance, and creating
 * one never looks the invitee up in the user directory (only the workspace's own members are
 * read), so its answer cannot tell whether the address or id belongs to anyone (ADR 0027).
 * Pending invitations are held in memory and on disk together (pending-invitations.ts);
 * answering one rereads it from disk under its lock, so it is taken at most once. An answered,
 * revoked or expired one is deleted.
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
  private readonly locks = new KeyedLock();
  private readonly pending: PendingInvitations;
  private readonly clock: Clock;

  constructor(
    layout: StorageLayout,
    private readonly users: Directory,
    private readonly workspaces: Memberships,
    /** Where a clean-up after a join that failed is told (`endAfterJoining`). */
    private readonly log: Logger,
    clock?: Clock,
  ) {
    this.clock = clock ?? systemClock;
    this.pending = new PendingInvitations(layout, this.locks, users, workspaces, this.clock);
  }

  /** Every pending invitation loaded, and those no longer pending deleted; at boot and by housekeeping. */
  load(): Promise<void> {
    return this.pending.load();
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
        if (!this.pending.senderStands({ workspaceId, invitedBy })) {
          throw new Forbidden("Only an active admin of this workspace can invite; you are no longer one.");
        }
        await this.pending.dropNamingMembers(workspaceId, members);
        await refuseBeyondBounds(
          invitee,
          this.pending.to(workspaceId),
          this.pending.sentBy(invitedBy),
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
        await this.pending.add(invitation);
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
    return this.pending.to(workspaceId).filter((invitation) => !members.has(inviteeKey(invitation.invitee)));
  }

  /**
   * The pending invitations a person may answer: those naming their id, and those naming an
   * email the directory records for them alone (a verified one: the directory keeps no
   * other, and an address two people signed in with names neither). None to a workspace they
   * are a member of, for the reason `forWorkspace` gives.
   */
  async forPerson(principalId: string): Promise<Invitation[]> {
    const mine = this.pending.naming(inviteeKey({ principalId }));
    const email = await recordedEmail(this.users, principalId);
    if (email) {
      const byEmail = this.pending.naming(inviteeKey({ email }));
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
    const workspaceId = (await this.pending.read(id))?.workspaceId;
    if (workspaceId === undefined) throw notFound();
    const ended = (end: () => Promise<void>) => this.endAfterJoining(workspaceId, principalId, end);
    return this.locks.run(workspaceId, async () => {
      const joined = await this.answer(id, principalId, join, (invitation) =>
        ended(() => this.pending.drop(invitation)),
      );
      await ended(() => this.pending.dropNaming(workspaceId, principalId));
      return joined;
    });
  }

  /** The person declines one of their invitations; any other naming them stays theirs to answer. */
  async decline(id: string, principalId: string): Promise<void> {
    await this.answer(
      id,
      principalId,
      async () => undefined,
      (invitation) => this.pending.drop(invitation),
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
    return this.locks.run(workspaceId, () => remove(() => this.pending.dropNaming(workspaceId, principalId)));
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
      const invitation = await this.pending.read(id);
      if (
        !invitation ||
        expiredAt(invitation, this.clock()) ||
        !(await isFor(this.users, invitation, principalId))
      ) {
        throw notFound();
      }
      if (!this.pending.senderStands(invitation)) {
        await this.pending.drop(invitation);
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
        if (senderGone) await this.pending.drop(invitation);
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
      const invitation = await this.pending.read(id);
      if (!invitation || invitation.workspaceId !== workspaceId) throw notFound();
      await this.pending.drop(invitation);
    });
  }

  /**
   * Every invitation to a workspace that is going away (archive). Under the workspace's key, as
   * `create` takes it, so one being written is either indexed by now or refused, the workspace gone.
   */
  async revokeAll(workspaceId: string): Promise<void> {
    await this.locks.run(workspaceId, () => this.pending.dropTo(workspaceId, () => true));
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
      this.pending.dropSentBy(
        principalId,
        (invitation) => workspaceId === undefined || invitation.workspaceId === workspaceId,
      ),
    );
  }
}

function notFound(): NotFound {
  return new NotFound(
    "invitation_not_found",
    "No pending invitation for you with that id; it may have expired.",
  );
}
