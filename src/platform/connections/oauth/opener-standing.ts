import { AccountDeactivated, WorkspaceNotFound } from "../../../errors.ts";
import type { UserDirectory } from "../../../identity/users.ts";
import { type AccessCheck, accessCheckOf, withRoleRequired } from "../../../workspace/access-check.ts";
import type { WorkspaceStore } from "../../../workspace/store.ts";
import type { FlowOutcome } from "./flow-outcomes.ts";
import type { Flow } from "./flows.ts";

/** Who is asked about a flow's opener: the same in-memory answers as the gate's. */
export interface StandingDeps {
  workspaces: Pick<WorkspaceStore, "roleOf">;
  users: Pick<UserDirectory, "isDeactivated">;
}

/** Why the person who opened a flow no longer has the standing opening it required. */
export type StandingLoss = "deactivated" | "not_member" | "not_admin";

/** The activation's commit check refused the flow's opener: nothing was activated. */
export class OpenerStandingLost extends Error {
  constructor(readonly loss: StandingLoss) {
    super(`the flow's opener lost their standing (${loss})`);
  }
}

/**
 * Why `principalId` may not open `flow`, asked at its go_url and again at its callback; `undefined`
 * when they may. A personal connection's flow is its owner's alone (a workspace admin is no
 * exception), as a member of the workspace; a workspace connection's, an admin's — the one who
 * started it, if one did.
 */
export function whyNotOpener(
  workspaces: StandingDeps["workspaces"],
  flow: Flow,
  principalId: string,
): string | undefined {
  const role = workspaces.roleOf(flow.workspaceId, principalId);
  if (flow.owner !== undefined) {
    if (flow.owner !== principalId) return "Only the owner of this personal connection can open it.";
    return role === undefined ? "Only a member of this workspace can authorize its connections." : undefined;
  }
  if (role !== "admin" || (flow.startedBy && flow.startedBy !== principalId))
    return `Only ${flow.startedBy ? "the workspace admin who started this authorization" : "a workspace admin"} can open it.`;
  return undefined;
}

/**
 * The access check of a flow's activation, for the person who opened it (`openerId`, bound at its
 * go_url), asked under the connection's lock just before the record naming the new tokens is
 * written (adr/0154, amended): the standing opening the flow required, still held — active, a
 * member of the flow's workspace, and for a workspace connection its admin (`whyNotOpener`'s
 * standing). Asked at the go_url and the callback only, an admin demoted (or a member removed)
 * while the code was redeemed at the authorization server still made the connection live
 * (test/integration/connections-oauth-activation-standing.test.ts).
 */
export function openerStanding(deps: StandingDeps, flow: Flow, openerId: string): AccessCheck {
  const access = accessCheckOf(deps.workspaces, deps.users, openerId, flow.workspaceId);
  // A personal connection's flow is its owner's to open as a member; a workspace one an admin's.
  const asked =
    flow.owner === undefined
      ? withRoleRequired(
          access,
          deps.workspaces,
          openerId,
          flow.workspaceId,
          "admin",
          () => new OpenerStandingLost("not_admin"),
        )
      : access;
  return () => {
    try {
      asked();
    } catch (error) {
      if (error instanceof AccountDeactivated) throw new OpenerStandingLost("deactivated");
      if (error instanceof WorkspaceNotFound) throw new OpenerStandingLost("not_member");
      throw error;
    }
  };
}

/** The callback's page for an activation its opener's lost standing refused: why, and what to do. */
export function standingLostOutcome(flow: Flow, loss: StandingLoss): FlowOutcome {
  const unchanged = `so connection "${flow.name}" was not authorized and is unchanged; this sign-in is spent`;
  const message = {
    deactivated: `Your account was deactivated by an org admin while you signed in, ${unchanged}. Ask an org admin to reactivate it, then sign in again from Atrium.`,
    not_member:
      flow.owner === undefined
        ? `You are no longer a member of this workspace, ${unchanged}. Ask one of its admins to authorize it.`
        : `You are no longer a member of this workspace, ${unchanged}. Ask one of its admins to add you again, then sign in again from Atrium.`,
    not_admin: `You are no longer an admin of this workspace, ${unchanged}. Ask one of its admins to authorize it.`,
  }[loss];
  return { status: 403, title: "No longer yours to authorize", message };
}
