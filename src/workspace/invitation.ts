import { randomBytes } from "node:crypto";
import { InvalidInput } from "../errors.ts";
import { foldEmail } from "../identity/users.ts";
import { isPrincipalId } from "../ids.ts";
import { isUnshowable } from "../text.ts";
import type { WorkspaceRole } from "./model.ts";

const MAX_EMAIL_CHARS = 254;

export const INVITATION_ID = /^inv_[0-9a-f]{32}$/;
const EMAIL = /^[^\s@]+@[^\s@]+$/;

/** Who an invitation is for, exactly as the admin named them: nothing is looked up. */
export type Invitee = { principalId: string } | { email: string };

/** A pending invitation, stored at `_instance/invitations/<id>.json` until it is answered. */
export interface Invitation {
  id: string;
  workspaceId: string;
  invitee: Invitee;
  role: WorkspaceRole;
  /** The admin who sent it. */
  invitedBy: string;
  createdAt: string;
  expiresAt: string;
}

export function newInvitationId(): string {
  return `inv_${randomBytes(16).toString("hex")}`;
}

/** Reads an invitee from a request body: `{"principalId"}` or `{"email"}`, checked for shape only. */
export function readInvitee(body: Record<string, unknown>): Invitee {
  // Both named: the email was dropped and the invitation went to the principalId, whoever was meant.
  if (body.principalId !== undefined && body.email !== undefined) {
    throw new InvalidInput('Name the person to invite with "principalId" or "email", not both.');
  }
  if (typeof body.principalId === "string") {
    if (!isPrincipalId(body.principalId)) {
      throw new InvalidInput('Field "principalId" is usr_ followed by 24 hex digits.');
    }
    return { principalId: body.principalId };
  }
  if (typeof body.email === "string") {
    const email = foldEmail(body.email);
    if (email.length > MAX_EMAIL_CHARS || !EMAIL.test(email) || isUnshowable(email)) {
      throw new InvalidInput(
        `Field "email" must be an email address of at most ${MAX_EMAIL_CHARS} characters.`,
      );
    }
    return { email };
  }
  throw new InvalidInput('Name the person to invite with "principalId" or "email".');
}

export function inviteeKey(invitee: Invitee): string {
  return "principalId" in invitee ? `principal:${invitee.principalId}` : `email:${invitee.email}`;
}
