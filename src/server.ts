import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { BootError } from "./errors.ts";
import { startHousekeeping } from "./housekeeping.ts";
import { createApp, type Security } from "./http/app.ts";
import type { RouteDeps } from "./http/context.ts";
import { McpEndpoint } from "./http/mcp/endpoint.ts";
import { createFrontServer } from "./http/mcp/front-server.ts";
import { OidcClient } from "./identity/oidc-client.ts";
import type { IdentityProvider } from "./identity/provider.ts";
import { createDevProvider } from "./identity/providers/dev.ts";
import { createOidcProvider } from "./identity/providers/oidc.ts";
import { sessionSecret } from "./identity/session-secret.ts";
import { Sessions, secureCookiesFor } from "./identity/sessions.ts";
import { UserDirectory } from "./identity/users.ts";
import { followPort } from "./instance/load.ts";
import type { InstanceConfig } from "./instance/schema.ts";
import { createLogger, type Logger } from "./log.ts";
import { PendingAuthorizations } from "./oauth/authorize/pending.ts";
import { type AuthorizationServer, createAuthorizationServer } from "./oauth/server.ts";
import { FileStore } from "./platform/files/store.ts";
import { createWorkspaceRegistry } from "./platform/index.ts";
import type { PlatformServices } from "./platform/services.ts";
import { createWorkspaceGuidance } from "./platform/skills/guidance.ts";
import { SkillService } from "./platform/skills/service.ts";
import { SkillWriter } from "./platform/skills/writer.ts";
import { IdleCache } from "./sources/idle-cache.ts";
import type { SourceRegistry } from "./sources/registry.ts";
import { Router } from "./sources/router.ts";
import { StorageLayout } from "./storage/paths.ts";
import { type LeftoverRules, RecoveryPass, recoverDataRoot } from "./storage/recovery.ts";
import { FirstWorkspace } from "./workspace/first-workspace.ts";
import { WorkspaceStore } from "./workspace/store.ts";

/** A workspace's sources are closed after this long without a request. */
export const IDLE_EVICT_MS = 10 * 60 * 1000;

export interface StartOptions {
  /** Replaces the provider named in instance.json; for tests that need several people. */
  identityProvider?: IdentityProvider;
  log?: Logger;
  idleEvictMs?: number;
  housekeepingIntervalMs?: number;
}

export interface RunningAtrium {
  /** The public base URL, e.g. http://127.0.0.1:8787. */
  url: string;
  port: number;
  workspaces: WorkspaceStore;
  users: UserDirectory;
  firstWorkspace: FirstWorkspace;
  registries: IdleCache<SourceRegistry>;
  sessions: Sessions;
  oauth: AuthorizationServer;
  close(): Promise<void>;
}

/** The provider's client, shared by browser sign-in and bearer-token checks; none under `dev`. */
function createOidcClient(config: InstanceConfig): OidcClient | undefined {
  return config.auth.adapter === "dev" ? undefined : new OidcClient(config.auth);
}

function createProvider(oidc: OidcClient | undefined): IdentityProvider {
  return oidc ? createOidcProvider(oidc) : createDevProvider();
}

/** Boots one instance: checks the data root, builds the surfaces, listens. */
export async function startAtrium(
  config: InstanceConfig,
  options: StartOptions = {},
): Promise<RunningAtrium> {
  const log = options.log ?? createLogger(config.log.level);
  const layout = new StorageLayout(config.storage.root);
  const workspaces = new WorkspaceStore(layout);
  await workspaces.load();
  const users = new UserDirectory(layout);
  await users.load();

  const services: PlatformServices = {
    files: new FileStore(layout, config.files.maxUploadBytes),
    skills: new SkillService(layout, config.skills, log),
    skillWriter: new SkillWriter(layout, workspaces),
  };
  // Before anything is served: complete or remove what interrupted writes left, and rebuild
  // the file locator on the way (storage/recovery.ts, adr/0024, adr/0025).
  const leftovers: LeftoverRules[] = [services.files, services.skillWriter];
  const recover = (pass: RecoveryPass) => recoverDataRoot(layout, workspaces.ids(), leftovers, pass, log);
  await recover(RecoveryPass.boot());
  const registries = new IdleCache<SourceRegistry>(
    async (workspaceId) => createWorkspaceRegistry(workspaceId, services),
    (registry) => registry.close(),
    options.idleEvictMs ?? IDLE_EVICT_MS,
  );
  const router = new Router(log);
  const guidance = createWorkspaceGuidance(services.skills);
  const endpoint = new McpEndpoint(createFrontServer(router, registries, guidance), config.http.maxBodyBytes);
  await endpoint.start();

  let publicUrl = config.http.publicUrl;
  const firstWorkspace = new FirstWorkspace(workspaces);
  const deps: RouteDeps = {
    workspaces,
    users,
    firstWorkspace,
    router,
    registries,
    services,
    guidance,
    publicUrl: () => publicUrl,
    maxBodyBytes: config.http.maxBodyBytes,
  };
  const secret = await sessionSecret(config.session, layout);
  const sessions = new Sessions(layout, {
    secret,
    maxAgeSeconds: config.session.maxAgeSeconds,
    secureCookies: secureCookiesFor(config.http.publicUrl),
  });
  const oauth = await createAuthorizationServer({
    layout,
    config: config.oauth,
    publicUrl: () => publicUrl,
    users,
    log,
  });
  const pending = new PendingAuthorizations(layout, secret);
  await pending.sweep();
  const oidc = createOidcClient(config);
  const security: Security = {
    oidc,
    provider: options.identityProvider ?? createProvider(oidc),
    sessions,
    oauth,
    pending,
  };
  const app = createApp(deps, security, endpoint, log);

  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: config.http.host, port: config.http.port }, () =>
      resolve(s),
    );
    s.once("error", (error: Error) =>
      reject(new BootError(`Cannot listen on ${config.http.host}:${config.http.port}: ${error.message}`)),
    );
  });
  const port = (server.address() as AddressInfo).port;
  publicUrl = followPort(config.http.publicUrl, port);
  log.info({ url: publicUrl, root: layout.root, provider: config.auth.adapter }, "atrium listening");
  const stopHousekeeping = startHousekeeping(
    [
      { name: "oauth codes", run: () => oauth.codes.sweep() },
      { name: "consent requests", run: () => pending.sweep() },
      { name: "oauth grants", run: () => oauth.grants.load() },
      { name: "sessions", run: () => sessions.sweep() },
      { name: "crash leftovers", run: async () => void (await recover(RecoveryPass.housekeeping())) },
    ],
    log,
    options.housekeepingIntervalMs,
  );

  return {
    url: publicUrl,
    port,
    workspaces,
    users,
    firstWorkspace,
    registries,
    sessions,
    oauth,
    async close() {
      stopHousekeeping();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      });
      await registries.close();
      await endpoint.close();
    },
  };
}
