import type { UserDirectory } from "../../identity/users.ts";
import type { Clock } from "../../kernel/clock.ts";
import type { EventPublisher } from "../../kernel/events.ts";
import type { Timers } from "../../kernel/timers.ts";
import type { Logger } from "../../log.ts";
import type { StorageLayout } from "../../storage/paths.ts";
import type { WorkspaceStore } from "../../workspace/store.ts";
import type { WorkspaceSources } from "../app.ts";
import type { AuditAppender } from "./call-audit.ts";
import type { ConnectionSettings } from "./config.ts";
import type { ConnectionView } from "./connection-view.ts";
import type { GrantStore } from "./grants.ts";
import type { Authorizer, GoLink } from "./oauth/authorizer.ts";
import type { CredentialVault, RemoteServers } from "./remote.ts";
import type { ServerLooks } from "./server-looks.ts";
import type { ConnectionStore } from "./store.ts";

/** An add as asked, each field checked by the service (model.ts). */
export interface NewConnection {
  name?: unknown;
  url?: unknown;
  auth?: unknown;
}

/** What the connections services are built from: a workspace's (connections.ts), a member's own (personal.ts). */
export interface ConnectionsDeps {
  store: ConnectionStore;
  remote: RemoteServers;
  vault: CredentialVault;
  workspaces: WorkspaceStore;
  users: Pick<UserDirectory, "isDeactivated">;
  sources: WorkspaceSources;
  events: EventPublisher;
  settings: ConnectionSettings;
  clock: Clock;
  /** What the published skills' idle sweep waits on; Node's own when not given. */
  timers?: Timers;
  log: Logger;
  /** Platform app names: a connection may not take one, nor be served under one (reserved-names.ts). */
  reservedNames: readonly string[];
  /** Where each call through a connection's gate is recorded. */
  ledger: AuditAppender;
  /** Wakes the credential check of a connection whose request met a 401. */
  onUnauthorized: (workspaceId: string, name: string) => void;
  /** Authorizations of OAuth connections (oauth/authorizer.ts). */
  authorizer: Authorizer;
  /** The store's looks at servers under way, which a disable, a remove or a stop ends (server-looks.ts). */
  looks: ServerLooks;
}

/** What a member's own connections are built from (personal.ts): the same, over the personal store. */
export interface PersonalDeps extends Omit<ConnectionsDeps, "store"> {
  /** The personal store, keyed by owner: `<root>/_instance/users/<owner>/connections/`. */
  store: ConnectionStore;
  layout: StorageLayout;
  grants: GrantStore;
}

/** An OAuth connection as added or re-authorized: where to send a browser to authorize it. */
export interface AuthorizationStarted extends GoLink {
  connection: ConnectionView;
}
