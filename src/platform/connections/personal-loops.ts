import { forEachAtMost } from "../../kernel/at-most.ts";
import type { Clock } from "../../kernel/clock.ts";
import type { Scheduler } from "../../kernel/scheduler.ts";
import type { Logger } from "../../log.ts";
import type { ConnectionSettings } from "./config.ts";
import { ConnectionRevalidator, HealthMonitor, PROBES_AT_ONCE } from "./health.ts";
import type { PersonalConnections } from "./personal.ts";
import type { RemoteServers } from "./remote.ts";
import type { ServerLooks } from "./server-looks.ts";
import type { ConnectionStore } from "./store.ts";

const NO_APP_NAMES: readonly string[] = [];

export interface PersonalLoopDeps {
  scheduler: Scheduler;
  store: ConnectionStore;
  remote: RemoteServers;
  personal: PersonalConnections;
  /** The personal store's looks at servers under way (server-looks.ts). */
  looks: ServerLooks;
  settings: ConnectionSettings;
  clock: Clock;
  log: Logger;
}

/**
 * The two health loops over personal connections, one pass over every owner, PROBES_AT_ONCE owners
 * at a time (one member's hanging servers hold up only their own lane). An owner who is
 * deactivated or in no workspace any more is skipped, checked live before each pass: nothing is
 * done with their credential (ADR 0042). Answers the credential check a 401 wakes, gated alike,
 * and the revalidator's stop.
 */
export function schedulePersonalLoops(deps: PersonalLoopDeps): {
  wake(owner: string, name: string): void;
  stop(): Promise<void>;
} {
  const { scheduler, store, remote, personal, looks, settings, clock, log } = deps;
  const changed = (owner: string, name: string) => personal.changed(owner, name);
  // A personal connection's name is `my_…`, which no platform app's is (ADR 0032).
  const monitor = new HealthMonitor(store, remote, clock, changed, NO_APP_NAMES);
  const revalidator = new ConnectionRevalidator(store, remote, clock, changed, NO_APP_NAMES, log, looks);
  const owners = () => new Set([...store.all()].map(({ workspaceId: owner }) => owner));
  const eachActiveOwner = (check: (owner: string) => Promise<void>) =>
    forEachAtMost(owners(), PROBES_AT_ONCE, async (owner) => {
      if (personal.mayActForOwner(owner)) await check(owner);
    });
  scheduler.add({
    name: "personal connections transport health",
    schedule: { everyMs: settings.healthIntervalMs },
    run: () => eachActiveOwner((owner) => monitor.checkWorkspace(owner)),
  });
  scheduler.add({
    name: "personal connections credential revalidation",
    schedule: { everyMs: settings.credentialCheckIntervalMs },
    run: () => eachActiveOwner((owner) => revalidator.checkWorkspace(owner)),
  });
  return {
    wake(owner, name) {
      if (personal.mayActForOwner(owner)) revalidator.wake(owner, name);
    },
    stop: () => revalidator.stop(),
  };
}
