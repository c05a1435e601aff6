import { isPersonalSourceName } from "../../sources/tool-names.ts";
import type { ConnectionView } from "./connection-view.ts";
import type { Connections } from "./connections.ts";
import type { NewConnection } from "./connections-deps.ts";
import type { PersonalConnections } from "./personal.ts";
import type { PersonalConnectionView } from "./personal-view.ts";

/**
 * The connections one member sees in one workspace: the workspace's, and their own personal
 * ones (ADR 0042). A name with `my_` is looked up among the caller's own connections only, any
 * other among the workspace's, so the routes and tools never reach another member's — to them it
 * answers `connection_not_found`, exactly as a name nobody holds.
 */
export class CallerConnections {
  constructor(
    private readonly shared: Connections,
    private readonly personal: PersonalConnections,
  ) {}

  async list(workspaceId: string, callerId: string): Promise<(ConnectionView | PersonalConnectionView)[]> {
    const [workspace, own] = await Promise.all([
      this.shared.list(workspaceId),
      this.personal.list(workspaceId, callerId),
    ]);
    return [...workspace, ...own];
  }

  /** `"personal": true` makes the caller's own connection (any member); otherwise the workspace's (admins). */
  add(workspaceId: string, callerId: string, request: NewConnection & { personal?: boolean | undefined }) {
    const { personal, ...rest } = request;
    return personal
      ? this.personal.add(workspaceId, callerId, rest)
      : this.shared.add(workspaceId, callerId, rest);
  }

  /** Re-authorizes an OAuth connection: the workspace's (admins), or a `my_` one of the caller's own. */
  startAuthorization(
    workspaceId: string,
    callerId: string,
    name: string,
    request: { scopes?: unknown } = {},
  ) {
    return isPersonalSourceName(name)
      ? this.personal.startAuthorization(workspaceId, callerId, name, request)
      : this.shared.startAuthorization(workspaceId, callerId, name, request);
  }

  view(workspaceId: string, callerId: string, name: string) {
    return isPersonalSourceName(name)
      ? this.personal.view(workspaceId, callerId, name)
      : this.shared.view(workspaceId, name);
  }

  remove(workspaceId: string, callerId: string, name: string): Promise<void> {
    return isPersonalSourceName(name)
      ? this.personal.remove(callerId, name)
      : this.shared.remove(workspaceId, callerId, name);
  }

  setDisabled(workspaceId: string, callerId: string, name: string, disabled: boolean) {
    return isPersonalSourceName(name)
      ? this.personal.setDisabled(workspaceId, callerId, name, disabled)
      : this.shared.setDisabled(workspaceId, callerId, name, disabled);
  }

  refresh(workspaceId: string, callerId: string, name: string) {
    return isPersonalSourceName(name)
      ? this.personal.refresh(workspaceId, callerId, name)
      : this.shared.refresh(workspaceId, callerId, name);
  }

  snapshot(workspaceId: string, callerId: string, name: string, version?: number) {
    return isPersonalSourceName(name)
      ? this.personal.snapshot(callerId, name, version)
      : this.shared.snapshot(workspaceId, name, version);
  }

  snapshots(workspaceId: string, callerId: string, name: string) {
    return isPersonalSourceName(name)
      ? this.personal.snapshots(callerId, name)
      : this.shared.snapshots(workspaceId, name);
  }

  diff(workspaceId: string, callerId: string, name: string, from: number, to: number) {
    return isPersonalSourceName(name)
      ? this.personal.diff(callerId, name, from, to)
      : this.shared.diff(workspaceId, name, from, to);
  }
}
