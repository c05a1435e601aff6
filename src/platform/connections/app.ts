import { splitToolName } from "../../sources/tool-names.ts";
import type { PlatformApp } from "../app.ts";
import { releaseArchivedCredentials } from "./archive-release.ts";
import { AuditLedger } from "./audit.ts";
import { auditRoutes } from "./audit-routes.ts";
import { CallerConnections } from "./caller-connections.ts";
import { Catalog } from "./catalog.ts";
import { catalogRoutes, catalogWorkspaceRoutes } from "./catalog-routes.ts";
import { type ConnectionSettings, connectionsConfig } from "./config.ts";
import { Connections } from "./connections.ts";
import { grantRoutes } from "./grant-routes.ts";
import { GrantStore, Grants } from "./grants.ts";
import { ConnectionRevalidator, HealthMonitor, PROBES_AT_ONCE } from "./health.ts";
import { forgetArchivedConnections, liveWorkspacesWithConnections } from "./live-workspaces.ts";
import { connectionOAuth } from "./oauth/wiring.ts";
import { PersonalConnections } from "./personal.ts";
import { schedulePersonalLoops } from "./personal-loops.ts";
import { createPersonalStore, recoverPersonalConnections } from "./personal-store.ts";
import { RemoteServers } from "./remote.ts";
import { logReservedNames } from "./reserved-names.ts";
import { connectionRoutes } from "./routes.ts";
import { createConnectionsTools } from "./server.ts";
import { ServerLooks } from "./server-looks.ts";
import { ConnectionStore } from "./store.ts";

export const connectionsApp: PlatformApp<ConnectionSettings> = {
  name: "connections",
  config: connectionsConfig,
  start(context) {
    const { settings, storage, clock, timers, scheduler, log } = context;
    const store = new ConnectionStore(storage);
    const ledger = new AuditLedger(storage, clock, timers, log);
    // Looks at servers under way, per store: what a disable, a remove or the stop ends (adr/0122).
    const looks = { shared: new ServerLooks(), personal: new ServerLooks() };
    let revalidator: ConnectionRevalidator | undefined;
    let shared: Connections | undefined;
    let personal: PersonalConnections | undefined;
    let wakePersonal: ((owner: string, name: string) => void) | undefined;
    const personalStore = createPersonalStore(context.layout);
    const oauth = connectionOAuth({
      settings,
      stores: { shared: store, personal: personalStore },
      vault: context.credentials,
      looks,
      leases: context.leases,
      layout: context.layout,
      clock,
      log,
      publicUrl: context.publicUrl,
      workspaces: context.workspaces,
      users: context.users,
      // A personal connection's authorization is its owner's: photographed, served and announced to them.
      activated: async (record) =>
        record.owner === undefined ? shared?.activated(record) : personal?.activated(record),
      refused: (record) => {
        if (record.owner === undefined) revalidator?.wake(record.workspaceId, record.name);
        else wakePersonal?.(record.owner, record.name);
      },
    });
    const remote = new RemoteServers(settings, context.credentials, clock, oauth.bearers, log);
    const common = {
      remote,
      vault: context.credentials,
      workspaces: context.workspaces,
      sources: context.sources,
      events: context.events,
      settings,
      clock,
      timers,
      log,
      reservedNames: context.appNames,
      ledger,
      authorizer: oauth.authorizer,
    };
    const connections = new Connections({
      ...common,
      users: context.users,
      store,
      looks: looks.shared,
      onUnauthorized: (workspaceId, name) => revalidator?.wake(workspaceId, name),
    });
    shared = connections;
    // Personal connections (ADR 0042): stored under their owners, served to them alone, acting in
    // a shared workspace only with an admin's grant.
    const grantStore = new GrantStore(storage);
    const grants = new Grants(grantStore, context.workspaces, clock);
    const mine = new PersonalConnections({
      ...common,
      store: personalStore,
      looks: looks.personal,
      layout: context.layout,
      users: context.users,
      grants: grantStore,
      onUnauthorized: (owner, name) => wakePersonal?.(owner, name),
    });
    personal = mine;
    mine.watchMembership(context.events);
    const personalLoops = schedulePersonalLoops({
      scheduler,
      store: personalStore,
      remote,
      personal: mine,
      looks: looks.personal,
      settings,
      clock,
      log,
    });
    wakePersonal = personalLoops.wake;
    const callerConnections = new CallerConnections(connections, mine);
    // A call refused before the gate (not a member, a token without the scope) is recorded too,
    // when the tool it named is one of this workspace's connections.
    context.dispatch.onDenied(async ({ caller, tool, by, requestId }) => {
      const source = splitToolName(tool)?.source;
      // A platform app's name is its tools' alone, whatever connection still bears it (adr/0128).
      const known =
        source !== undefined &&
        !context.appNames.includes(source) &&
        (store.names(caller.workspaceId).includes(source) ||
          personalStore.names(caller.principalId).includes(source));
      if (!known) return;
      const call = {
        principalId: caller.principalId,
        connection: source,
        tool: tool.slice(source.length + 2),
        requestId,
      };
      await ledger.append(caller.workspaceId, { ...call, phase: "requested" });
      await ledger.append(caller.workspaceId, {
        ...call,
        phase: "decision",
        decision: "denied",
        deniedBy: by,
      });
    });
    context.publishedSkills.publish((workspaceId) => connections.publishedSkills(workspaceId));
    const changed = (workspaceId: string, name: string) => connections.changed(workspaceId, name);
    const monitor = new HealthMonitor(store, remote, clock, changed, context.appNames);
    revalidator = new ConnectionRevalidator(
      store,
      remote,
      clock,
      changed,
      context.appNames,
      log,
      looks.shared,
    );
    // Both loops visit only workspaces that have a connection: the rest cost nothing. An archived
    // workspace's connections were let go at its archive (`archived`, below), secrets and all; a
    // create that landed as the archive did is let go at the loops' next look.
    const withConnections = () =>
      liveWorkspacesWithConnections(
        store,
        oauth.authorizer,
        (workspaceId) => context.workspaces.get(workspaceId) !== undefined,
      );
    scheduler.add({
      name: "connections transport health",
      schedule: { everyMs: settings.healthIntervalMs },
      workspaces: withConnections,
      concurrency: PROBES_AT_ONCE,
      run: (workspaceId) => monitor.checkWorkspace(workspaceId),
    });
    const checker = revalidator;
    scheduler.add({
      name: "connections credential revalidation",
      schedule: { everyMs: settings.credentialCheckIntervalMs },
      workspaces: withConnections,
      concurrency: PROBES_AT_ONCE,
      run: (workspaceId) => checker.checkWorkspace(workspaceId),
    });
    const catalog = new Catalog({
      dir: settings.catalogDir,
      storage,
      clock,
      timers,
      log,
      cacheBytes: settings.catalogCacheBytes,
    });
    const routes = grantRoutes(grants);
    routes.route("/", connectionRoutes(callerConnections));
    routes.route("/", auditRoutes(ledger));
    routes.route(
      "/",
      catalogWorkspaceRoutes(
        catalog,
        (workspaceId, principalId, request) => connections.add(workspaceId, principalId, request),
        context.workspaces,
      ),
    );
    const instanceRoutes = catalogRoutes(catalog);
    instanceRoutes.route("/", oauth.routes);
    return {
      tools: createConnectionsTools(callerConnections, grants),
      sources: async (workspaceId) => [
        ...(await connections.sources(workspaceId)),
        ...(await mine.sources(workspaceId)),
      ],
      workspaceRoutes: routes,
      routes: instanceRoutes,
      // Its catalog entries and connection grants leave memory with it too (adr/0038, amended).
      archived: (workspaceId) => {
        forgetArchivedConnections(store, oauth.authorizer, workspaceId);
        catalog.forget(workspaceId);
        grantStore.forgetWorkspace(workspaceId);
      },
      // After boot recovery has indexed every workspace's connections.
      ready: async () => logReservedNames(store.all(), context.appNames, log),
      // Looks at servers under way end first, so no server holds the stop (adr/0122, amended); a
      // credential check a 401 woke ends before the root is let go.
      stop: async () => {
        await Promise.all([connections.stop(), mine.stop()]);
        await Promise.all([checker.stop(), personalLoops.stop(), catalog.close()]);
      },
      // An exchange of credentials (a token refresh, its discovery included; a callback's code) is
      // let finish and stored within the drain deadline, one a request still draining began too
      // (connections-oauth-stop.test.ts "a token refresh begun while a request still drains").
      drained: (letGo) => oauth.settled(letGo),
      leftovers: {
        async recoverWorkspace(workspaceId, present, pass) {
          await store.recoverWorkspace(workspaceId, present, pass);
          await catalog.recoverWorkspace(workspaceId, present, pass);
          await grantStore.recoverWorkspace(workspaceId, present, pass);
        },
        recoverInstance: (pass) => recoverPersonalConnections(personalStore, context.layout, pass),
      },
    };
  },
  // An archived workspace's connections are gone with it; their sealed values would otherwise
  // stay in _instance/credentials/ for good (archive-retention.test.ts).
  archiveReleaser:
    ({ storage, credentials }) =>
    (workspaceId, archivedName, archive) =>
      releaseArchivedCredentials(storage, credentials, workspaceId, archivedName, archive),
};
