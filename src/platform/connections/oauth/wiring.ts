import type { Hono } from "hono";
import type { Clock } from "../../../kernel/clock.ts";
import type { ExclusiveLeases } from "../../../kernel/leases.ts";
import type { Logger } from "../../../log.ts";
import { guardedFetch } from "../../../sources/guarded-fetch.ts";
import type { StorageLayout } from "../../../storage/paths.ts";
import type { AppEnv } from "../../../web/app-env.ts";
import type { ConnectionSettings } from "../config.ts";
import type { ConnectionRecord } from "../model.ts";
import type { CredentialVault, OAuthBearers } from "../remote.ts";
import { Authorizer } from "./authorizer.ts";
import { ConnectionTokens } from "./connection-tokens.ts";
import { CredentialExchanges } from "./credential-exchanges.ts";
import type { StandingDeps } from "./opener-standing.ts";
import { type ConnectionStores, recordHome } from "./record-home.ts";
import { StoredRegistrations } from "./registrations.ts";
import { oauthRoutes } from "./routes.ts";
import type { ConnectionLooks } from "./until-stop.ts";

/** The most bytes a metadata document, registration or token answer may carry. */
const MAX_OAUTH_RESPONSE_BYTES = 1024 * 1024;

export interface ConnectionOAuthDeps {
  settings: ConnectionSettings;
  /** The workspace's store and the personal one (keyed by owner): a record is read where it lives. */
  stores: ConnectionStores;
  vault: CredentialVault;
  /**
   * Each store's looks at servers: a graceful stop ends a sign-in's discovery and client
   * registration under way, never a token refresh or a code exchange (adr/0122, amended).
   */
  looks: ConnectionLooks;
  leases: ExclusiveLeases;
  layout: StorageLayout;
  clock: Clock;
  log: Logger;
  publicUrl: () => string;
  /** Workspaces and people as the gate knows them: who may open a flow, and who still may at its activation. */
  workspaces: StandingDeps["workspaces"];
  users: StandingDeps["users"];
  /** An authorization was activated (the connections service, or the personal one, photographs and serves it). */
  activated(record: ConnectionRecord): Promise<void>;
  /** A refresh token was refused for good (the revalidator — the owner's, for a personal one — gives its verdict). */
  refused(record: ConnectionRecord): void;
}

/** The OAuth side of the connections app, built once: tokens, authorizations, their routes. */
export function connectionOAuth(deps: ConnectionOAuthDeps): {
  authorizer: Authorizer;
  bearers: OAuthBearers;
  routes: Hono<AppEnv>;
  /**
   * Once no exchange of credentials is under way (a token refresh, a callback's code exchange),
   * those begun while it waited included: what a graceful stop waits for once the requests have
   * drained. `letGo` aborts before the root is let go: none starts or stores its answer after.
   */
  settled(letGo: AbortSignal): Promise<void>;
} {
  // Discovery, registration and token requests leave through the same SSRF guard as MCP traffic.
  const fetch = guardedFetch({
    allowPrivate: deps.settings.allowPrivateAddresses,
    timeoutMs: deps.settings.requestTimeoutMs,
    maxResponseBytes: MAX_OAUTH_RESPONSE_BYTES,
    log: deps.log,
  });
  const current = (record: ConnectionRecord) => {
    const { store, key } = recordHome(deps.stores, record);
    return store.get(key, record.name);
  };
  let authorizer: Authorizer | undefined;
  const exchanges = new CredentialExchanges();
  const tokens = new ConnectionTokens({
    exchanges,
    vault: deps.vault,
    leases: deps.leases,
    clock: deps.clock,
    log: deps.log,
    fetch,
    current,
    stored: (record) => {
      const { store, key } = recordHome(deps.stores, record);
      return store.holds(key, record.name, record.id);
    },
    authority: (record, issuedTo) => (authorizer as Authorizer).authority(record, issuedTo),
    refused: deps.refused,
  });
  const built = new Authorizer({
    stores: deps.stores,
    tokens,
    leases: deps.leases,
    clock: deps.clock,
    log: deps.log,
    publicUrl: deps.publicUrl,
    fetch,
    configured: deps.settings.oauthClients,
    registrations: new StoredRegistrations(deps.layout, deps.vault, deps.clock),
    exchanges,
    looks: deps.looks,
    workspaces: deps.workspaces,
    users: deps.users,
    activated: deps.activated,
  });
  authorizer = built;
  return {
    authorizer: built,
    bearers: {
      bearer: (record, rejected, signal) => tokens.bearer(record, rejected, signal),
      refused: (record) => tokens.refused(record),
      stepUp: async (record, scope) => built.stepUp(await current(record), scope),
      secrets: (record) => tokens.secrets(record),
    },
    routes: oauthRoutes(built, deps.publicUrl),
    settled: (letGo) => {
      const underWay = exchanges.count();
      // What the stop waits on, said: an authorization server slow to answer holds it.
      if (underWay > 0)
        deps.log.info({ exchanges: underWay }, "shutdown waits for the credential exchanges under way");
      return exchanges.settled(letGo);
    },
  };
}
