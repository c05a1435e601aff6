import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { getRequestListener } from "@hono/node-server";
import { BootError } from "./errors.ts";
import { type BuiltParts, closeBuilt, gracefulStop } from "./graceful-stop.ts";
import { archiveChores, scheduleHousekeeping } from "./housekeeping.ts";
import {
  authenticatorsFor,
  createApp,
  instanceOriginCheck,
  type RegisteredRoute,
  registeredRoutes,
  type Security,
} from "./http/app.ts";
import type { RouteDeps } from "./http/context.ts";
import { HttpDrain } from "./http/drain.ts";
import { McpEndpoint } from "./http/mcp/endpoint.ts";
import { createFrontServers } from "./http/mcp/front-server.ts";
import { createMcpFrontDoor } from "./http/mcp-front-door.ts";
import { writableResponses } from "./http/writable-response.ts";
import { OidcClient } from "./identity/oidc-client.ts";
import type { IdentityProvider } from "./identity/provider.ts";
import { createDevProvider } from "./identity/providers/dev.ts";
import { createOidcProvider } from "./identity/providers/oidc.ts";
import { sessionSecret } from "./identity/session-secret.ts";
import { Sessions, secureCookiesFor } from "./identity/sessions.ts";
import { UserDirectory } from "./identity/users.ts";
import { warnMissingFolders } from "./instance/configured-folders.ts";
import { followPort } from "./instance/load.ts";
import { type InstanceLock, InstanceLockLostWhileBooting } from "./instance/lock.ts";
import type { InstanceConfig } from "./instance/schema.ts";
import { type Clock, systemClock } from "./kernel/clock.ts";
import { WorkspaceEventLog } from "./kernel/event-log.ts";
import { EventBus } from "./kernel/events.ts";
import { everyLeaseLocal } from "./kernel/leases.ts";
import { Scheduler } from "./kernel/scheduler.ts";
import { systemTimers, type Timers } from "./kernel/timers.ts";
import { bootLocked } from "./locked-boot.ts";
import { createLogger, type Logger } from "./log.ts";
import { ParkedRequests } from "./oauth/authorize/parked.ts";
import { PendingAuthorizations } from "./oauth/authorize/pending.ts";
import { type AuthorizationServer, createAuthorizationServer } from "./oauth/server.ts";
import type { PlatformApp, StartedApp } from "./platform/app.ts";
import { PLATFORM_APPS } from "./platform/index.ts";
import {
  archiveReleasers,
  createWorkspaceRegistry,
  publishedSkills,
  startApps,
  workspaceSources,
} from "./platform/kit.ts";
import { ToolDispatch } from "./sources/dispatch.ts";
import { composeGuidance } from "./sources/guidance.ts";
import { IdleCache } from "./sources/idle-cache.ts";
import type { SourceRegistry } from "./sources/registry.ts";
import { Router } from "./sources/router.ts";
import { CredentialStore } from "./storage/credential-store.ts";
import { KeyedLock } from "./storage/keyed-lock.ts";
import { StorageLayout } from "./storage/paths.ts";
import { RecoveryPass, recoverDataRoot } from "./storage/recovery.ts";
import { FirstWorkspace } from "./workspace/first-workspace.ts";
import { Invitations } from "./workspace/invitations.ts";
import { WorkspaceStore } from "./workspace/store.ts";

/** A workspace's sources are closed after this long without a request. */
export const IDLE_EVICT_MS = 10 * 60 * 1000;

export interface StartOptions {
  /** Replaces the provider named in instance.json; for tests that need several people. */
  identityProvider?: IdentityProvider;
  log?: Logger;
  idleEvictMs?: number;
  housekeepingIntervalMs?: number;
  lockHeartbeatMs?: number;
  /** The platform apps to serve (default PLATFORM_APPS): adding one is this list and its folder. */
  apps?: readonly PlatformApp[];
  /** The one clock every part reads the time from; tests move a fake one (ADR 0031). */
  clock?: Clock;
  /** How the scheduler waits; tests fire due jobs by moving a fake clock. */
  timers?: Timers;
  /** Ends the process once the stop a lost lock set off has ended (the CLI's); none by default. */
  exit?: (code: number) => void;
}

export interface RunningAtrium {
  /** The public base URL, e.g. http://127.0.0.1:8787. */
  url: string;
  port: number;
  workspaces: WorkspaceStore;
  users: UserDirectory;
  firstWorkspace: FirstWorkspace;
  registries: IdleCache<SourceRegistry>;
  /** The one way a tool is called, also without an HTTP request (a task run; tests call it so). */
  dispatch: ToolDispatch;
  sessions: Sessions;
  oauth: AuthorizationServer;
  /** Every route the HTTP app answers (test/integration/route-docs.test.ts holds the docs to it). */
  routes: readonly RegisteredRoute[];
  /** What happened, as typed events; the event stream (issue 9) reads it. */
  events: EventBus;
  /**
   * Graceful stop: stops accepting, lets in-flight requests finish within
   * `http.drainSeconds`, then releases the data root. Called again while a stop runs (begun by
   * either), it cuts off what is still in flight at once: a second signal.
   */
  close(): Promise<void>;
  /** The same stop, begun or joined: unlike close(), one under way is never cut short (ADR 0093). */
  stop(): Promise<void>;
}

/** The provider's client, shared by browser sign-in and bearer-token checks; none under `dev`. */
function createOidcClient(config: InstanceConfig, clock: Clock): OidcClient | undefined {
  return config.auth.adapter === "dev" ? undefined : new OidcClient(config.auth, clock);
}

function createProvider(oidc: OidcClient | undefined): IdentityProvider {
  return oidc ? createOidcProvider(oidc) : createDevProvider();
}

/** Boots one instance: takes the data root, checks it, builds the surfaces, listens. */
export async function startAtrium(
  config: InstanceConfig,
  options: StartOptions = {},
): Promise<RunningAtrium> {
  const log = options.log ?? createLogger(config.log.level);
  const layout = new StorageLayout(config.storage.root);
  const clock = options.clock ?? systemClock;
  // Before anything else reads or writes the root: one root, one process (ADR 0022).
  return bootLocked(
    layout,
    {
      publicUrl: config.http.publicUrl,
      log,
      clock,
      heartbeatMs: options.lockHeartbeatMs,
      exit: options.exit,
    },
    (lock, lockLost) => startLocked(config, options, log, layout, lock, clock, lockLost),
  );
}

async function startLocked(
  config: InstanceConfig,
  options: StartOptions,
  log: Logger,
  layout: StorageLayout,
  lock: InstanceLock,
  clock: Clock,
  lockLost: () => Promise<boolean>,
): Promise<RunningAtrium> {
  await warnMissingFolders(config, log);
  const events = new EventBus(log);
  // Subscribed first, so a stream's sequence numbers every event from the first publish.
  const eventLog = new WorkspaceEventLog(events);
  const timers = options.timers ?? systemTimers;
  // Before any app: a root holding sealed values the configured keys cannot open stops here.
  const credentials = await CredentialStore.open(layout, config.credentials);
  const workspaces = new WorkspaceStore(layout, events, clock, config.workspaces.maxAdministeredPerPerson);
  await workspaces.load();
  const users = new UserDirectory(layout, clock);
  await users.load();
  const invitations = new Invitations(layout, users, workspaces, log, clock);
  // A removal ends the person's invitations to the workspace, whoever asks the store (ADR 0131).
  workspaces.endsWithMembership(invitations);
  await invitations.load();

  // A registry is built on a workspace's first request, by which time every app has started;
  // the dispatch exists before the apps so that an app can call tools (a task run).
  const apps: StartedApp[] = [];
  const registries = new IdleCache<SourceRegistry>(
    (workspaceId) => createWorkspaceRegistry(workspaceId, apps),
    (registry) => registry.close(),
    options.idleEvictMs ?? IDLE_EVICT_MS,
    { clock, timers },
  );
  const router = new Router(log);
  const dispatch = new ToolDispatch(workspaces, users, registries, router);
  const scheduler = new Scheduler({ clock, timers, leases: everyLeaseLocal, log });
  // From here on a failed boot closes what it started: nothing of it outlives it in this process.
  const { drainSeconds } = config.http;
  const built: BuiltParts = { scheduler, apps, registries, events, timers, drainSeconds };
  try {
    return await serve();
  } catch (error) {
    await closeBuilt(built, log);
    throw error;
  }

  async function serve(): Promise<RunningAtrium> {
    // Known once the listener is bound (a loopback port 0 is followed); read through a function.
    let publicUrl = config.http.publicUrl;
    await startApps(
      options.apps ?? PLATFORM_APPS,
      {
        layout,
        workspaces,
        users,
        dispatch,
        sources: workspaceSources(registries),
        publishedSkills: publishedSkills(),
        events,
        clock,
        timers,
        scheduler,
        credentials,
        leases: new KeyedLock(),
        publicUrl: () => publicUrl,
        log,
      },
      config,
      apps,
    );
    // Before anything is served: complete or remove what interrupted writes left, and rebuild
    // the file locator on the way (storage/recovery.ts, adr/0024, adr/0025).
    const leftovers = apps.flatMap((app) => (app.leftovers ? [app.leftovers] : []));
    const recover = (pass: RecoveryPass) => recoverDataRoot(layout, workspaces.ids(), leftovers, pass, log);
    await recover(RecoveryPass.boot(clock()));
    // Every app's sources exist now, so work that calls tools may start (a task's missed schedule).
    for (const started of apps) await started.ready?.();
    const guidance = composeGuidance(apps.flatMap((app) => (app.guidance ? [app.guidance] : [])));
    const endpoint = new McpEndpoint(
      createFrontServers({ router, registries, dispatch, guidance, log }),
      config.http.maxBodyBytes,
      (caller, name) =>
        registries.use(caller.workspaceId, (registry) =>
          router.findTool(registry, caller.principal.id, name),
        ),
    );
    built.endpoint = endpoint;
    await endpoint.start();

    const firstWorkspace = new FirstWorkspace(workspaces);
    const deps: RouteDeps = {
      apps,
      workspaces,
      users,
      invitations,
      firstWorkspace,
      router,
      dispatch,
      registries,
      guidance,
      publicUrl: () => publicUrl,
      maxBodyBytes: config.http.maxBodyBytes,
      events,
      eventLog,
      timers,
      calls: endpoint,
    };
    const secret = await sessionSecret(config.session, layout);
    const sessions = new Sessions(layout, {
      secret,
      maxAgeSeconds: config.session.maxAgeSeconds,
      secureCookies: secureCookiesFor(config.http.publicUrl),
      now: clock,
      standingOf: (principalId) => users.standingOf(principalId),
    });
    const oauth = await createAuthorizationServer({
      layout,
      config: config.oauth,
      publicUrl: () => publicUrl,
      users,
      workspaces,
      log,
      clock,
    });
    const pending = new PendingAuthorizations(layout, secret, clock);
    await pending.sweep();
    const oidc = createOidcClient(config, clock);
    const security: Security = {
      oidc,
      provider: options.identityProvider ?? createProvider(oidc),
      sessions,
      oauth,
      pending,
      parked: new ParkedRequests(config.oauth.parkedRequestsPerHour, clock),
    };
    const app = createApp(deps, security, endpoint, log);
    // POST /mcp/ws_… is answered before hono (adr/0052); everything else goes to the app.
    const frontDoor = createMcpFrontDoor({
      deps,
      auth: authenticatorsFor(deps, security),
      origins: instanceOriginCheck(deps),
      endpoint,
      log,
    });

    const honoListener = getRequestListener(writableResponses(app.fetch, log), {
      hostname: config.http.host,
    });
    const requestTimeout = config.http.requestTimeoutSeconds * 1000;
    const server = createServer({
      // A request whose body is not whole by then is answered 408 and its connection closed, however
      // slowly it still moves: a body trickled a byte at a time would otherwise hold what it sent.
      // (Node reads it only here, when the server is made.)
      requestTimeout,
      // How often Node looks for such requests: at most a tenth of the timeout late, and no more
      // often than its own default of 30 s needs.
      connectionsCheckingInterval: Math.min(30_000, requestTimeout / 10),
    });
    built.server = server;
    // A connection that moves no bytes for this long is destroyed (Node's socket timeout): a client
    // that stops reading its answer would otherwise hold the answer's memory for good.
    server.timeout = config.http.idleTimeoutSeconds * 1000;
    const drain = new HttpDrain(server);
    server.on("request", (request, response) => {
      drain.track(frontDoor(request, response) ?? honoListener(request, response));
    });
    // Frozen while booting and taken over (ADR 0022): what boot built is closed, never listened on.
    if (await lockLost()) throw new InstanceLockLostWhileBooting(layout.instanceLockFile());
    await listen(server, config.http.port, config.http.host);
    const port = (server.address() as AddressInfo).port;
    publicUrl = followPort(config.http.publicUrl, port);
    await lock.setPublicUrl(publicUrl);
    log.info({ url: publicUrl, root: layout.root, provider: config.auth.adapter }, "atrium listening");
    scheduleHousekeeping(
      scheduler,
      [
        { name: "oauth codes", run: () => oauth.codes.sweep() },
        { name: "consent requests", run: () => pending.sweep() },
        { name: "oauth grants", run: () => oauth.grants.load() },
        { name: "oauth clients", run: () => oauth.sweepClients() },
        { name: "sessions", run: () => sessions.sweep() },
        { name: "invitations", run: () => invitations.load() },
        {
          name: "crash leftovers",
          run: async () => void (await recover(RecoveryPass.housekeeping(clock()))),
        },
        ...archiveChores(config.storage.archiveRetentionDays, {
          layout,
          now: clock,
          isLive: (workspaceId) => workspaces.get(workspaceId) !== undefined,
          releasers: archiveReleasers(options.apps ?? PLATFORM_APPS, { layout, credentials }),
          cause: "past storage.archiveRetentionDays",
          log,
          // A round under way when the root is taken over goes no further than the archive it is
          // removing: the heartbeat's stop comes up to a beat later (ADR 0146).
          mayWrite: () => lock.stillHeld(),
        }),
      ],
      log,
      options.housekeepingIntervalMs,
      () => lock.stillHeld(),
    );

    return {
      url: publicUrl,
      routes: registeredRoutes(app),
      port,
      workspaces,
      users,
      firstWorkspace,
      registries,
      dispatch,
      sessions,
      oauth,
      events,
      ...gracefulStop({
        ...built,
        endpoint,
        lastWrites: (signal) => oauth.clients.writeRememberedUses(signal, () => lock.stillHeld()),
        drain,
        eventLog,
        lock,
        clock,
        log,
      }),
    };
  }
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.listen(port, host, resolve);
    server.once("error", (error: NodeJS.ErrnoException) => {
      const hint =
        error.code === "EADDRINUSE"
          ? "; that port is taken: use --port 0 (any free port) or another --port N"
          : "";
      reject(new BootError(`Cannot listen on ${host}:${port}: ${error.message}${hint}`));
    });
  });
}
