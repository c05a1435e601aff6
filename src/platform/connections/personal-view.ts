import type { ConnectionView } from "./connection-view.ts";
import type { Connections } from "./connections.ts";
import type { ConnectionState } from "./model.ts";
import type { GoLink } from "./oauth/authorizer.ts";
import { type AccessDeps, type GrantState, grantState } from "./personal-access.ts";

/** A personal connection as its owner sees it from one workspace. */
export interface PersonalConnectionView extends Omit<ConnectionView, "state"> {
  personal: true;
  /** `needs_grant` when the workspace is shared and no admin granted it here. */
  state: ConnectionState | "needs_grant";
  grant: GrantState;
}

/** A personal OAuth connection as added or re-authorized: the go_url only its owner may open. */
export interface PersonalAuthorizationStarted extends GoLink {
  connection: PersonalConnectionView;
}

/** `ownerId`'s connection `name` as they see it from `workspaceId`, its grant there included. */
export async function viewPersonal(
  core: Pick<Connections, "view">,
  deps: AccessDeps,
  workspaceId: string,
  ownerId: string,
  name: string,
): Promise<PersonalConnectionView> {
  const view = await core.view(ownerId, name);
  const grant = await grantState(deps, workspaceId, ownerId, name);
  // Authorizing comes before a grant matters: a pending connection says so, whatever the grant.
  const waiting = view.state === "disabled" || view.state === "pending_auth";
  const state = grant === "needed" && !waiting ? "needs_grant" : view.state;
  return { ...view, personal: true, state, grant };
}
