import { expect } from "vitest";
import type { RestBody } from "./atrium.ts";

/** A REST request as a named person: TestAtrium.rest, or a wall suite's people. */
export type RestAs = (
  user: string,
  method: string,
  path: string,
  body?: RestBody,
  headers?: Record<string, string>,
) => Promise<Response>;

/** How an admin names the person they invite: by id, or by an email the person signs in with. */
export type InviteeBody = { principalId: string } | { email: string };

/** `admin` invites someone to `ws`; the invitation as the answer shows it. */
export async function invite(
  rest: RestAs,
  admin: string,
  ws: string,
  invitee: InviteeBody,
  role: "admin" | "member" = "member",
): Promise<{ id: string }> {
  const response = await rest(admin, "POST", `/v1/workspaces/${ws}/invitations`, { ...invitee, role });
  expect(response.status, `${admin} invites ${JSON.stringify(invitee)} to ${ws}`).toBe(201);
  return ((await response.json()) as { invitation: { id: string } }).invitation;
}

/**
 * The one way anyone joins a workspace: an admin invites them and they accept. `person` is
 * who accepts (the invitee: their name, as `rest` knows them).
 */
export async function addMember(
  rest: RestAs,
  admin: string,
  ws: string,
  person: string,
  invitee: InviteeBody,
  role: "admin" | "member" = "member",
): Promise<void> {
  const invitation = await invite(rest, admin, ws, invitee, role);
  const accepted = await rest(person, "POST", `/v1/invitations/${invitation.id}/accept`);
  expect(accepted.status, `${person} accepts the invitation to ${ws}`).toBe(200);
}
