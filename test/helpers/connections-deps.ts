import { createLogger } from "../../src/log.ts";
import type { WorkspaceSources } from "../../src/platform/app.ts";
import type { ConnectionSettings } from "../../src/platform/connections/config.ts";
import type { ConnectionsDeps, PersonalDeps } from "../../src/platform/connections/connections-deps.ts";
import { ServerLooks } from "../../src/platform/connections/server-looks.ts";
import { DEFAULT_MAX_SNAPSHOT_BYTES } from "../../src/platform/connections/snapshot.ts";
import type { ConnectionStore } from "../../src/platform/connections/store.ts";

/**
 * What a Connections (or PersonalConnections) service needs, for a unit test that drives it
 * without a running instance: everyone is an admin and active, sources, events, the ledger and the
 * authorizer take what they are given and do nothing; `overrides` replaces any of them.
 */
export function inertConnectionsDeps(
  store: ConnectionStore,
  overrides: Record<string, unknown> = {},
): ConnectionsDeps & PersonalDeps {
  const sources: WorkspaceSources = { replace: async () => undefined, remove: async () => undefined };
  return {
    store,
    remote: {},
    vault: { delete: async () => undefined },
    workspaces: { roleOf: () => "admin", listFor: () => [] },
    users: { isDeactivated: () => false },
    sources,
    events: { publish: () => undefined },
    settings: {
      toolListMaxAgeMs: 60_000,
      maxSnapshotBytes: DEFAULT_MAX_SNAPSHOT_BYTES,
    } as ConnectionSettings,
    clock: () => Date.UTC(2026, 11, 7),
    log: createLogger("silent"),
    reservedNames: [],
    ledger: { append: async () => undefined },
    onUnauthorized: () => undefined,
    authorizer: { forget: () => undefined },
    looks: new ServerLooks(),
    ...overrides,
  } as unknown as ConnectionsDeps & PersonalDeps;
}
