import { forEachAtMost } from "../../kernel/at-most.ts";
import { type Clock, isWithin } from "../../kernel/clock.ts";
import type { Logger } from "../../log.ts";
import { type CredentialHealth, type Observation, outOfService, type TransportHealth } from "./model.ts";
import type { RemoteServers } from "./remote.ts";
import type { ServerLooks } from "./server-looks.ts";
import { type ConnectionStore, isConnectionNotFound } from "./store.ts";

/**
 * How many connections of one workspace (or one owner) a loop probes at once, and how many
 * workspaces (owners) it visits at once. A server that hangs holds one probe until
 * connections.requestTimeoutSeconds; probed one after another, every hanging one delayed every
 * later check of every workspace by that long.
 */
export const PROBES_AT_ONCE = 4;

const BACKOFF_BASE_MS = 1_000;
const BACKOFF_CAP_MS = 5 * 60 * 1000;

/**
 * Whether a down connection still waits for `retryAt`. A retry more than the longest backoff
 * ahead was not set by this clock as it reads now: it was stepped back since (or `retryAt` was
 * written, to transport.json, while it ran ahead), and waiting for it kept a server that is
 * back `degraded` for the whole step (health.test.ts "stepped back"). It is probed now.
 */
function isBackingOff(nowMs: number, retryAtMs: number): boolean {
  return isWithin(nowMs, retryAtMs - BACKOFF_CAP_MS, BACKOFF_CAP_MS);
}

/** What a loop tells the app when its conclusion about a connection changed. */
export type Changed = (workspaceId: string, name: string) => Promise<void>;

/**
 * A look at a connection removed while it ran (its record, or the app told of a change, finds no
 * connection of that name) has nothing left to conclude: it stops there, quietly.
 */
function unlessRemoved(error: unknown): void {
  if (!isConnectionNotFound(error)) throw error;
}

/**
 * Whether the connection a probe looked at was removed and added again under its name while the
 * server answered (an admin replacing a lapsed credential): its conclusion is not the new one's.
 * Removed and not added again, the record is not found, which ends the look (unlessRemoved).
 */
async function replacedMeanwhile(
  store: ConnectionStore,
  workspaceId: string,
  looked: { id: string; name: string },
): Promise<boolean> {
  return (await store.get(workspaceId, looked.name)).id !== looked.id;
}

function observation(clock: Clock, startedMs: number, ok: boolean, detail?: string): Observation {
  return {
    at: new Date(clock()).toISOString(),
    outcome: ok ? "ok" : "failed",
    latencyMs: clock() - startedMs,
    ...(detail === undefined ? {} : { detail }),
  };
}

/**
 * Transport liveness. Each interval it probes every connection of a workspace (a bare `ping`,
 * no credential), marks one that does not answer down and tries it again after a capped,
 * jittered exponential backoff, forever, and brings it back up by itself. It owns
 * `transport.json` and nothing else: it never reads or writes a credential or the
 * revalidator's conclusion. A connection out of service (`outOfService`) is not probed.
 */
export class HealthMonitor {
  constructor(
    private readonly store: ConnectionStore,
    private readonly remote: RemoteServers,
    private readonly clock: Clock,
    private readonly changed: Changed,
    /** Platform app names: a connection bearing one is not served, so not probed (adr/0128). */
    private readonly appNames: readonly string[],
    private readonly random: () => number = Math.random,
  ) {}

  async checkWorkspace(workspaceId: string): Promise<void> {
    await forEachAtMost(this.store.names(workspaceId), PROBES_AT_ONCE, (name) =>
      this.check(workspaceId, name),
    );
  }

  check(workspaceId: string, name: string): Promise<void> {
    return this.probe(workspaceId, name).catch(unlessRemoved);
  }

  private async probe(workspaceId: string, name: string): Promise<void> {
    const before = await this.store.transport(workspaceId, name);
    if (!before.up && before.retryAt !== undefined && isBackingOff(this.clock(), before.retryAt)) return;
    const record = await this.store.get(workspaceId, name);
    if (outOfService(record, this.appNames)) return;
    const started = this.clock();
    const probe = await this.remote.reachable(record.url);
    if (await replacedMeanwhile(this.store, workspaceId, record)) return;
    const last = observation(this.clock, started, probe.ok, probe.detail);
    const after: TransportHealth = probe.ok
      ? { up: true, failures: 0, last }
      : {
          up: false,
          failures: before.failures + 1,
          last,
          retryAt: this.clock() + this.backoff(before.failures + 1),
        };
    await this.store.writeTransport(workspaceId, name, after);
    if (after.up !== before.up) await this.changed(workspaceId, name);
  }

  /** Doubling from a second to five minutes, with up to half of it taken off at random. */
  private backoff(failures: number): number {
    const full = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** Math.min(failures - 1, 20));
    return Math.round(full * (0.5 + this.random() / 2));
  }
}

/**
 * Credential liveness. Each interval, and at once when any request of a connection met a 401,
 * it opens a session with the connection's credential and makes one round trip on it. A 401
 * means the credential lapsed; a static one cannot be renewed, so the connection becomes
 * `reauth_required` (the app then posts to the workspace's inbox) and is not checked again
 * until it is re-authorized. Any other failure is the transport's business, recorded but not
 * judged. It owns `credential.json` and nothing else: it never restarts a transport or reads the
 * monitor's conclusion. A connection out of service (`outOfService`) is not checked. Each check is
 * one of the store's looks at a server (server-looks.ts): a disable, a remove or a graceful stop
 * cuts its client and it writes nothing (adr/0122, amended).
 */
export class ConnectionRevalidator {
  private readonly running = new Map<string, Promise<void>>();
  private stopped = false;

  constructor(
    private readonly store: ConnectionStore,
    private readonly remote: RemoteServers,
    private readonly clock: Clock,
    private readonly changed: Changed,
    /** Platform app names: a connection bearing one is not served, so not checked (adr/0128). */
    private readonly appNames: readonly string[],
    private readonly log: Logger,
    private readonly looks: ServerLooks,
  ) {}

  async checkWorkspace(workspaceId: string): Promise<void> {
    await forEachAtMost(this.store.names(workspaceId), PROBES_AT_ONCE, (name) =>
      this.check(workspaceId, name),
    );
  }

  /** One check of one connection at a time; a 401 during a check does not start a second. */
  check(workspaceId: string, name: string): Promise<void> {
    const key = `${workspaceId}/${name}`;
    let run = this.running.get(key);
    if (!run) {
      if (this.stopped) return Promise.resolve();
      run = this.looks
        .run(workspaceId, name, (signal) => this.revalidate(workspaceId, name, signal))
        .catch(unlessRemoved)
        .finally(() => this.running.delete(key));
      this.running.set(key, run);
    }
    return run;
  }

  /**
   * A check nobody waits for (a request met a 401, an OAuth refresh token was refused): one that
   * fails is logged, never left to reject unhandled, which would end the process. Its failures are
   * the store's, the credential store's and the app's, never the server's words, which the check
   * itself catches (test/unit/platform/connections/health.test.ts "wake").
   */
  wake(workspaceId: string, name: string): void {
    this.check(workspaceId, name).catch((error: unknown) => {
      this.log.error({ workspaceId, connection: name, err: error }, "connection credential check failed");
    });
  }

  /**
   * A graceful stop: no check starts any more, and the ones in flight — a 401 wakes them with no
   * request or scheduled pass to wait for — end before the instance lets go of its root: with their
   * conclusion, or with none once the stop ended their look (ServerLooks.endAll).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.allSettled(this.running.values());
  }

  private async revalidate(workspaceId: string, name: string, signal: AbortSignal): Promise<void> {
    const before = await this.store.credential(workspaceId, name);
    const record = await this.store.get(workspaceId, name);
    if (before.lapsed || record.auth.kind === "none" || outOfService(record, this.appNames)) return;
    // A pending OAuth connection has no credential to check yet.
    if (record.auth.kind === "oauth" && record.auth.tokens === undefined) return;
    let unauthorized = false;
    const started = this.clock();
    const source = await this.remote.source(record, {
      onStatus: (status) => {
        if (status === 401) unauthorized = true;
      },
    });
    // "now" cuts a connect the server holds (adr/0109), as a refresh's photograph is cut.
    const cut = () => void source.close("now").catch(() => undefined);
    signal.addEventListener("abort", cut, { once: true });
    let failure: string | undefined;
    try {
      signal.throwIfAborted();
      await source.describe();
      await source.roundTrip();
    } catch (error) {
      failure = (error as Error).message.slice(0, 200);
    } finally {
      signal.removeEventListener("abort", cut);
      await source.close().catch(() => undefined);
    }
    // Ended by a disable, a remove or a stop: what a cut client answered concludes nothing.
    if (signal.aborted) return;
    if (await replacedMeanwhile(this.store, workspaceId, record)) return;
    // An OAuth refresh token the authorization server refused is as final as a 401: it lapsed.
    if (this.remote.credentialRefused(record)) unauthorized = true;
    const after: CredentialHealth = {
      lapsed: unauthorized,
      last: observation(
        this.clock,
        started,
        failure === undefined,
        unauthorized ? "the server answered 401, or refused the refresh token" : failure,
      ),
    };
    await this.store.writeCredential(workspaceId, name, after, signal);
    // A disable written before the conclusion, under the connection's lock: it wrote nothing.
    if (signal.aborted) return;
    if (after.lapsed) {
      this.log.warn(
        { workspaceId, connection: name },
        "connection credential lapsed; re-authorization required",
      );
      await this.changed(workspaceId, name);
    }
  }
}
