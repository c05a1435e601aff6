import type { PlatformApp } from "../app.ts";
import { AuditLedger } from "./audit.ts";
import { auditRoutes } from "./audit-routes.ts";
import { type ConnectionSettings, connectionsConfig } from "./config.ts";
import { Connections } from "./connections.ts";
import { ConnectionRevalidator, HealthMonitor } from "./health.ts";
import { RemoteServers } from "./remote.ts";
import { connectionRoutes } from "./routes.ts";
import { createConnectionsServer } from "./server.ts";
import { ConnectionStore } from "./store.ts";

export const connectionsApp: PlatformApp<ConnectionSettings> = {
  name: "connections",
  config: connectionsConfig,
  start(context) {
    const { settings, storage, clock, scheduler, log } = context;
    const store = new ConnectionStore(storage);
    const ledger = new AuditLedger(storage, clock);
    const remote = new RemoteServers(settings, context.credentials, clock);
    let revalidator: ConnectionRevalidator | undefined;
    const connections = new Connections({
      store,
      remote,
      vault: context.credentials,
      workspaces: context.workspaces,
      sources: context.sources,
      events: context.events,
      settings,
      clock,
      log,
      reservedNames: context.appNames,
      ledger,
      onUnauthorized: (workspaceId, name) => void revalidator?.check(workspaceId, name),
    });
    const changed = (workspaceId: string, name: string) => connections.changed(workspaceId, name);
    const monitor = new HealthMonitor(store, remote, clock, changed);
    revalidator = new ConnectionRevalidator(store, remote, clock, changed, log);
    // Both loops visit only workspaces that have a connection: the rest cost nothing.
    const withConnections = () => new Set([...store.all()].map((entry) => entry.workspaceId));
    scheduler.add({
      name: "connections transport health",
      schedule: { everyMs: settings.healthIntervalMs },
      workspaces: withConnections,
      run: (workspaceId) => monitor.checkWorkspace(workspaceId),
    });
    const checker = revalidator;
    scheduler.add({
      name: "connections credential revalidation",
      schedule: { everyMs: settings.credentialCheckIntervalMs },
      workspaces: withConnections,
      run: (workspaceId) => checker.checkWorkspace(workspaceId),
    });
    const routes = connectionRoutes(connections);
    routes.route("/", auditRoutes(ledger));
    return {
      createServer: (workspaceId) => createConnectionsServer(workspaceId, connections),
      sources: (workspaceId) => connections.sources(workspaceId),
      workspaceRoutes: routes,
      leftovers: store,
    };
  },
};
