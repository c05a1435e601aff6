import { Hono } from "hono";
import type { UserDirectory } from "../identity/users.ts";
import type { OAuthConfig } from "../instance/schema.ts";
import { type Clock, systemClock } from "../kernel/clock.ts";
import type { Logger } from "../log.ts";
import type { StorageLayout } from "../storage/paths.ts";
import type { AppEnv } from "../web/app-env.ts";
import { workspaceMcpUrl } from "../web/urls.ts";
import type { WorkspaceStore } from "../workspace/store.ts";
import { ClientMetadataDocuments } from "./client-metadata.ts";
import { ClientRegistry } from "./clients.ts";
import { AuthorizationCodes } from "./codes.ts";
import { Grants } from "./grants.ts";
import { SigningKeys } from "./keys.ts";
import { metadataRoutes } from "./routes/metadata.ts";
import { personGrantRoutes } from "./routes/person-grants.ts";
import { registerRoutes } from "./routes/register.ts";
import { revokeRoutes } from "./routes/revoke.ts";
import { signingKeyRoutes } from "./routes/signing-keys.ts";
import { tokenRoutes } from "./routes/token.ts";
import { AccessTokens } from "./tokens.ts";
import { UnusedClientCap } from "./unused-client-cap.ts";

export { isOAuthPublicPath } from "./routes/cors.ts";

export interface AuthorizationServerDeps {
  layout: StorageLayout;
  config: OAuthConfig;
  publicUrl: () => string;
  users: UserDirectory;
  /** Whose grants still count: a grant holds only while its person is a member of its workspace. */
  workspaces: Pick<WorkspaceStore, "memberOf">;
  log: Logger;
  /** Tests move time; everything else uses the system clock. */
  clock?: Clock;
}

/** Atrium's own OAuth 2.1 authorization server for MCP clients, minus the browser pages. */
export interface AuthorizationServer {
  keys: SigningKeys;
  tokens: AccessTokens;
  clients: ClientRegistry;
  codes: AuthorizationCodes;
  grants: Grants;
  /** Housekeeping: deletes registered clients long unused that hold no live grant (ADR 0137). */
  sweepClients(): Promise<void>;
  /** Metadata, JWKS, registration, token, revocation and key rotation; mount at "/". */
  routes(): Hono<AppEnv>;
}

/** Loads the signing keys and the revoked-grant set and sweeps dead codes: call once at boot. */
export async function createAuthorizationServer(deps: AuthorizationServerDeps): Promise<AuthorizationServer> {
  const clock = deps.clock ?? systemClock;
  const { config, layout, log, publicUrl } = deps;
  const keys = new SigningKeys(layout, config.accessTokenTtlSeconds, clock);
  const grants = new Grants(layout, {
    users: deps.users,
    // A grant names its workspace by id, so it still belongs to it after the public URL changes
    // (test/integration/oauth-flow.test.ts "survives a restart", on another port).
    memberOf: (principalId, workspaceId) => deps.workspaces.memberOf(workspaceId, principalId),
    resourceOf: (workspaceId) => workspaceMcpUrl(publicUrl(), workspaceId),
    accessTokenTtlSeconds: config.accessTokenTtlSeconds,
    refreshTokenTtlSeconds: config.refreshTokenTtlSeconds,
    refreshReuseGraceSeconds: config.refreshReuseGraceSeconds,
    log,
    clock,
  });
  const codes = new AuthorizationCodes(layout, grants, log, clock);
  const documents = new ClientMetadataDocuments({
    allowPrivate: config.allowPrivateClientMetadata,
    fetchesPerHour: config.clientMetadataFetchesPerHour,
    clock,
  });
  const unusedClients = new UnusedClientCap(config.maxUnusedClients, (clientId) =>
    grants.hasLiveGrantOf(clientId),
  );
  const clients = new ClientRegistry(layout, documents, log, clock, unusedClients);
  await Promise.all([keys.load(), grants.load(), codes.sweep(), clients.load()]);
  const tokens = new AccessTokens({
    keys,
    grants,
    publicUrl,
    clock,
  });

  let routes: Hono<AppEnv> | undefined;
  return {
    keys,
    tokens,
    clients,
    codes,
    grants,
    async sweepClients() {
      const swept = await clients.sweep((clientId) => grants.hasLiveGrantOf(clientId));
      if (swept.length > 0) {
        log.info(
          { swept: swept.length },
          "registered oauth clients unused for 30 days and holding no live grant were deleted",
        );
      }
    },
    routes() {
      if (!routes) {
        const app = new Hono<AppEnv>();
        app.route("/", metadataRoutes({ keys, publicUrl }));
        app.route(
          "/",
          registerRoutes({
            clients,
            log,
            registrationsPerHour: deps.config.registrationsPerHour,
            ...(deps.clock ? { clock: deps.clock } : {}),
          }),
        );
        app.route("/", tokenRoutes({ clients, codes, grants, tokens, log }));
        app.route("/", revokeRoutes({ clients, grants, tokens, log }));
        app.route("/", signingKeyRoutes({ keys, log }));
        app.route("/", personGrantRoutes({ grants, clients, publicUrl, log }));
        routes = app;
      }
      return routes;
    },
  };
}
