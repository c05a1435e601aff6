import { type Invitation, inviteeKey } from "./invitation.ts";

/**
 * The invitations held in memory, by id and by invitee, workspace and sender: what `Invitations`
 * has read from disk or written, kept current as it writes and deletes. It knows nothing of
 * which are still pending (expiry, the sender's standing): `Invitations` decides that.
 */
export class InvitationIndex {
  private readonly byId = new Map<string, Invitation>();
  private readonly byInvitee = new Map<string, Set<string>>();
  private readonly byWorkspace = new Map<string, Set<string>>();
  private readonly byInviter = new Map<string, Set<string>>();

  get(id: string): Invitation | undefined {
    return this.byId.get(id);
  }

  ids(): string[] {
    return [...this.byId.keys()];
  }

  workspaceIds(): string[] {
    return [...this.byWorkspace.keys()];
  }

  /**
   * The invitations naming the invitee key, to the workspace, or sent by the person: a copy, so
   * a caller may drop them one by one as it goes.
   */
  naming(inviteeKeyValue: string): Invitation[] {
    return this.lookup(this.byInvitee.get(inviteeKeyValue));
  }

  to(workspaceId: string): Invitation[] {
    return this.lookup(this.byWorkspace.get(workspaceId));
  }

  sentBy(principalId: string): Invitation[] {
    return this.lookup(this.byInviter.get(principalId));
  }

  add(invitation: Invitation): void {
    this.byId.set(invitation.id, invitation);
    addTo(this.byInvitee, inviteeKey(invitation.invitee), invitation.id);
    addTo(this.byWorkspace, invitation.workspaceId, invitation.id);
    addTo(this.byInviter, invitation.invitedBy, invitation.id);
  }

  remove(id: string): void {
    const invitation = this.byId.get(id);
    if (!invitation) return;
    this.byId.delete(id);
    removeFrom(this.byInvitee, inviteeKey(invitation.invitee), id);
    removeFrom(this.byWorkspace, invitation.workspaceId, id);
    removeFrom(this.byInviter, invitation.invitedBy, id);
  }

  private lookup(ids: Set<string> | undefined): Invitation[] {
    const found: Invitation[] = [];
    for (const id of ids ?? []) {
      const invitation = this.byId.get(id);
      if (invitation) found.push(invitation);
    }
    return found;
  }
}

function addTo(index: Map<string, Set<string>>, key: string, id: string): void {
  const ids = index.get(key) ?? new Set<string>();
  ids.add(id);
  index.set(key, ids);
}

function removeFrom(index: Map<string, Set<string>>, key: string, id: string): void {
  const ids = index.get(key);
  ids?.delete(id);
  if (ids?.size === 0) index.delete(key);
}
