import type { Server } from "node:http";
import type { HttpDrain } from "./http/drain.ts";
import type { McpEndpoint } from "./http/mcp/endpoint.ts";
import type { InstanceLock } from "./instance/lock.ts";
import type { Clock } from "./kernel/clock.ts";
import type { WorkspaceEventLog } from "./kernel/event-log.ts";
import type { EventBus } from "./kernel/events.ts";
import type { Scheduler } from "./kernel/scheduler.ts";
import type { Timers } from "./kernel/timers.ts";
import { flushLog, type Logger } from "./log.ts";
import type { StartedApp } from "./platform/app.ts";
import { closeAppSources } from "./platform/kit.ts";
import type { IdleCache } from "./sources/idle-cache.ts";
import type { SourceRegistry } from "./sources/registry.ts";

/** What a boot builds that runs on its own until closed: jobs, apps, their sources, the endpoint. */
export interface BuiltParts {
  scheduler: Scheduler;
  apps: readonly StartedApp[];
  registries: IdleCache<SourceRegistry>;
  /** Its subscribers' work (an app's write an event started) ends before the root is let go. */
  events: EventBus;
  /** Absent when the boot stopped before building it. */
  endpoint?: McpEndpoint;
  /** The HTTP server, once made; it may be listening when the boot fails after `listen`. */
  server?: Server;
  /** How long background work is waited for (`http.drainSeconds`, BACKGROUND_FLOOR_MS at least). */
  drainSeconds: number;
  timers: Timers;
}

/** Reports a part of a stop that failed, named (`part`), so the rest still ends. */
type Failed = (error: unknown, part: string) => void;

/**
 * The least time a stop (or a failed boot's close) gives background work, whatever
 * `http.drainSeconds` says (ADR 0093, amended): the apps' stops and what their events start are
 * local writes (a run recorded interrupted, its notice) that end in milliseconds. A drain of 0
 * means no request is drained, not that the apps are not waited for: with it the lock went while
 * an app's stop still wrote in the root, which a next process may own by then
 * (boot-failed-close.test.ts "drainSeconds 0"). The drain already gives the handlers it cuts
 * off as long (UNWIND_MS, http/drain.ts), so a stop's longest wait does not grow.
 */
export const BACKGROUND_FLOOR_MS = 5_000;

/** How long after a stop begins its background work is waited for at most. */
function backgroundDeadlineMs(drainSeconds: number): number {
  return Math.max(drainSeconds * 1000, BACKGROUND_FLOOR_MS);
}

/**
 * Closes what a boot built when the boot cannot go on (the lock lost, a port taken, a damaged
 * root found late): no job, app or source it started keeps running in the process, and what
 * the apps' last work started has ended before its caller lets go of the root (server.ts), in
 * the graceful stop's order (ADR 0093): jobs and the apps' stops, their `drained`, the events'
 * work, waited for `drainSeconds` (BACKGROUND_FLOOR_MS at least); then sources and the endpoint
 * close. The root was let go while what an app's stop announced was still being written, and
 * `drained` was never asked (test/integration/boot-failed-close.test.ts). Every part is closed
 * even if another fails to; each failure is logged, and the boot's own error is the one its
 * caller sees.
 */
export async function closeBuilt(parts: BuiltParts, log: Logger): Promise<void> {
  const failed: Failed = (error, part) =>
    log.error({ err: error, part }, "closing what a failed boot had started failed");
  if (parts.server?.listening) parts.server.close();
  // Aborted as the close returns, just before its caller lets go of the root.
  const letGo = new AbortController();
  const work = new BackgroundWork(parts, failed);
  work.stop();
  // A failed boot has no requests to drain: what the apps wait for once they are done is asked
  // for at once.
  work.drained(letGo.signal);
  if (!(await settledBefore(work.ended(), backgroundDeadlineMs(parts.drainSeconds), parts.timers))) {
    log.warn(
      work.left(),
      "closing a failed boot left background work running: it was past the drain deadline",
    );
  }
  await closeSources(parts, failed);
  letGo.abort();
}

/** Closes the workspaces' sources, the apps' and the endpoint, each even if another fails. */
async function closeSources(parts: BuiltParts, failed: Failed): Promise<void> {
  await attempt("workspace sources", () => parts.registries.close(), failed);
  await attempt("app sources", () => closeAppSources(parts.apps), failed);
  await attempt("mcp endpoint", () => parts.endpoint?.close(), failed);
}

/** `step`'s result, or undefined once what it threw is reported to `failed`. */
async function attempt<T>(part: string, step: () => Promise<T> | T, failed: Failed): Promise<T | undefined> {
  try {
    return await step();
  } catch (error) {
    failed(error, part);
    return undefined;
  }
}

/**
 * How long a stop waits for `lastWrites`: local writes of a few small files, which take
 * milliseconds; a hung disk must not hold the stop.
 */
const LAST_WRITES_MS = 2_000;

export interface StopParts extends BuiltParts {
  endpoint: McpEndpoint;
  /**
   * Writes what only memory holds (a registered client's use whose write failed, ADR 0137), once
   * the requests are done and before the root is let go; best effort, it throws nothing. It starts
   * no write once `signal` is aborted, as it is before the root is let go.
   */
  lastWrites(signal: AbortSignal): Promise<void>;
  drain: HttpDrain;
  eventLog: WorkspaceEventLog;
  lock: InstanceLock;
  clock: Clock;
  log: Logger;
}

/** A graceful stop, asked for in two ways; both answer once it has ended, as `stop()` does. */
export interface GracefulStop {
  /** Begins the stop, or joins the one under way: never cuts anything off. */
  stop(): Promise<void>;
  /** Begins the stop, or cuts short the one under way (a second signal). */
  close(): Promise<void>;
}

/**
 * The graceful stop of a running instance (ADR 0023, 0093): requests drain for `drainSeconds`
 * while scheduled jobs and the apps' own work end beside them, and what the apps wait for once
 * the requests are done (their `drained`); then sources and the endpoint close and the root is
 * let go. `close()` while it runs cuts off what is still in flight and stops waiting for
 * background work; `stop()` only joins it, as a lost lock's stop and a signal's do each other's
 * (one SIGTERM during a lost lock's stop cut off every request still draining,
 * test/unit/graceful-stop.test.ts "joins"). A part that fails (an app's `stop`) is logged and the
 * rest still ends, the lock released included; the stop then rejects with the first failure (the
 * CLI exits 1). It rejected at the first failure, before the sources closed and the lock went, so
 * the next boot waited for the lock to go stale (test/integration/stop-failure.test.ts).
 */
export function gracefulStop(parts: StopParts): GracefulStop {
  const { drain, clock, timers, log } = parts;
  let closing: Promise<void> | undefined;
  let forced = false;
  let forceStop: () => void = () => undefined;
  const stopForced = new Promise<void>((resolve) => {
    forceStop = resolve;
  });
  const stop = (): Promise<void> => {
    closing ??= (async () => {
      const startedMs = clock();
      const drainMs = parts.drainSeconds * 1000;
      const failures: unknown[] = [];
      const failed: Failed = (error, part) => {
        failures.push(error);
        log.error({ err: error, part }, "a part of the shutdown failed; the rest still ends");
      };
      log.info({ inFlight: drain.inFlight(), drainSeconds: parts.drainSeconds }, "shutdown started");
      // Scheduled work and the work an app runs with no request around it (a task run) end
      // beside the requests: nothing new starts, a run in progress ends and is recorded so.
      // A failure is reported as it comes: one during the drain was an unhandled rejection,
      // which ends the process before the lock goes (test/integration/stop-failure.test.ts).
      const work = new BackgroundWork(parts, failed);
      work.stop();
      // An event stream never finishes by itself: ended here, it does not hold the drain open.
      await attempt("event streams", () => parts.eventLog.closeAll(), failed);
      const counts = await attempt("requests' drain", () => drain.drain(drainMs), failed);
      // Aborted just before the root is let go: what the apps wait for after the drain and the
      // last writes start nothing once a next process may own the root.
      const letGo = new AbortController();
      // Waited for only now, so what a request still draining began is waited for too: an
      // exchange of credentials begun during the drain was not, when the connections app waited
      // for it as its stop began (connections-oauth-stop.test.ts "begun while a request still drains").
      work.drained(letGo.signal);
      // Background work gets the requests' deadline too (but never less than the floor its
      // local writes need), and a second signal cuts it off: a health probe to a hung remote
      // would otherwise hold the stop for its own timeout, up to 300 s, whatever the signals
      // (test/integration/shutdown.test.ts "background work").
      const finished = await settledBefore(
        work.ended(),
        Math.max(0, startedMs + backgroundDeadlineMs(parts.drainSeconds) - clock()),
        timers,
        stopForced,
      );
      if (!finished) {
        log.warn(
          work.left(),
          "shutdown left background work running: it was past the drain deadline or asked again",
        );
      }
      await closeSources(parts, failed);
      // Memory does not outlive the process: what only it holds is written while the root is
      // still this process's, for LAST_WRITES_MS at most and not at all after a second signal
      // (test/integration/oauth-client-sweep.test.ts "a use whose write failed"). Aborted before
      // the lock goes, so no write starts once a next process may own the root: only waiting was
      // bounded, and a second signal still started them (test/unit/graceful-stop.test.ts).
      const lastWritten =
        !forced &&
        (await settledBefore(
          parts
            .lastWrites(letGo.signal)
            .catch((error: unknown) => log.error({ err: error }, "the last writes failed")),
          LAST_WRITES_MS,
          timers,
          stopForced,
        ));
      letGo.abort();
      if (!lastWritten) {
        log.warn(
          { waitedMs: LAST_WRITES_MS },
          "shutdown did not wait longer for the last writes of what only memory held (or was asked again)",
        );
      }
      // Last: until here this process still owns the root (a restart waits or is refused). A lock
      // no longer ours is left to its holder (InstanceLock.release).
      await attempt("instance lock", () => parts.lock.release(), failed);
      log.info({ ...counts, ms: clock() - startedMs, failed: failures.length }, "shutdown finished");
      // Lines are written asynchronously (src/log.ts): out before close() says it is done.
      await flushLog(log);
      if (failures.length > 0) throw failures[0];
    })();
    return closing;
  };
  return {
    stop,
    close: () => {
      if (!closing) return stop();
      forced = true;
      drain.force();
      forceStop();
      return closing;
    },
  };
}

/**
 * The background work a stop ends and waits for (ADR 0093): scheduled jobs in progress, the
 * apps' own work (`stop`), what they wait for once no request is left (`drained`), and then what
 * their last events started in other apps, whose own stop may have returned before those events
 * came: an interrupted run's notification (tasks-stop-notice.test.ts). A part that fails is
 * reported to `failed` as it fails and counts as ended, so the rest is still waited for.
 */
class BackgroundWork {
  private readonly ending: Promise<unknown>[] = [];
  private readonly stopping = new Set<string>();
  private readonly draining = new Set<string>();

  constructor(
    private readonly parts: Pick<BuiltParts, "scheduler" | "apps" | "events">,
    private readonly failed: Failed,
  ) {}

  stop(): void {
    this.add("scheduled jobs", () => this.parts.scheduler.stop());
    for (const started of this.parts.apps) {
      if (started.stop) {
        this.add(`${started.name} stop`, () =>
          this.during(this.stopping, started.name, () => started.stop?.()),
        );
      }
    }
  }

  /** `letGo` aborts just before the root is let go. */
  drained(letGo: AbortSignal): void {
    for (const started of this.parts.apps) {
      if (started.drained) {
        const work = () => started.drained?.(letGo);
        this.add(`${started.name} drained`, () => this.during(this.draining, started.name, work));
      }
    }
  }

  /** Once every part begun has ended, and then the work events started, begun meanwhile included. */
  ended(): Promise<void> {
    return Promise.all(this.ending).then(() => this.parts.events.settled());
  }

  /** What has not ended, for the warning of a stop that stopped waiting. */
  left(): { jobs: string[]; apps: string[]; events: string[] } {
    return {
      jobs: this.parts.scheduler.runningJobs(),
      apps: [...new Set([...this.stopping, ...this.draining])],
      events: this.parts.events.inFlight(),
    };
  }

  /** Handled at once: `ended()` is asked for only after the drain. */
  private add(part: string, work: () => Promise<unknown>): void {
    this.ending.push(attempt(part, work, this.failed));
  }

  private async during(
    names: Set<string>,
    name: string,
    work: () => Promise<void> | undefined,
  ): Promise<void> {
    names.add(name);
    try {
      await work();
    } finally {
      names.delete(name);
    }
  }
}

/**
 * Whether `work` settled within `deadlineMs` (on the instance's timers) and before `cutOff`, if
 * given; false once either comes first. The work itself goes on: it is only no longer waited for.
 */
async function settledBefore(
  work: Promise<unknown>,
  deadlineMs: number,
  timers: Timers,
  cutOff: Promise<void> = new Promise<void>(() => undefined),
): Promise<boolean> {
  let cancel: (() => void) | undefined;
  const deadline = new Promise<false>((resolve) => {
    cancel = timers.after(deadlineMs, () => resolve(false));
  });
  try {
    return await Promise.race([work.then(() => true), deadline, cutOff.then(() => false as const)]);
  } finally {
    cancel?.();
  }
}
