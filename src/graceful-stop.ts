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
  /** Absent when the boot stopped before building it. */
  endpoint?: McpEndpoint;
  /** The HTTP server, once made; it may be listening when the boot fails after `listen`. */
  server?: Server;
}

/**
 * Closes what a boot built when the boot cannot go on (the lock lost, a port taken, a damaged
 * root found late): no job, app or source it started keeps running in the process. Every part
 * is closed even if another fails to; each failure is logged, and the boot's own error is the
 * one its caller sees.
 */
export async function closeBuilt(parts: BuiltParts, log: Logger): Promise<void> {
  const steps: (() => Promise<unknown>)[] = [
    async () => {
      if (parts.server?.listening) parts.server.close();
    },
    () => parts.scheduler.stop(),
    () => Promise.all(parts.apps.map((started) => started.stop?.())),
    () => parts.registries.close(),
    () => closeAppSources(parts.apps),
    async () => parts.endpoint?.close(),
  ];
  for (const step of steps) {
    try {
      await step();
    } catch (error) {
      log.error({ err: error }, "closing what a failed boot had started failed");
    }
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
  /** Its subscribers' work (an app's write an event started) ends before the root is let go. */
  events: EventBus;
  lock: InstanceLock;
  drainSeconds: number;
  clock: Clock;
  timers: Timers;
  log: Logger;
}

/**
 * The graceful stop of a running instance (ADR 0023, 0093): requests drain for `drainSeconds`
 * while scheduled jobs and the apps' own work end beside them, and what the apps wait for once
 * the requests are done (their `drained`); then sources and the endpoint close and the root is
 * let go. Called again while that runs, it cuts off what is still in flight and stops waiting for
 * background work.
 */
export function gracefulStop(parts: StopParts): () => Promise<void> {
  const { scheduler, apps, drain, clock, timers, log } = parts;
  let closing: Promise<void> | undefined;
  let forced = false;
  let forceStop: () => void = () => undefined;
  const stopForced = new Promise<void>((resolve) => {
    forceStop = resolve;
  });
  return () => {
    if (closing) {
      forced = true;
      drain.force();
      forceStop();
      return closing;
    }
    closing = (async () => {
      const startedMs = clock();
      const drainMs = parts.drainSeconds * 1000;
      log.info({ inFlight: drain.inFlight(), drainSeconds: parts.drainSeconds }, "shutdown started");
      // Scheduled work drains beside the requests: nothing new starts, a run in progress ends.
      const jobsStopped = scheduler.stop();
      // Work an app runs with no request around it (a task run) ends now and is recorded so.
      const appsStopping = new Set<string>();
      const appsStopped = Promise.all(
        apps.map(async (started) => {
          appsStopping.add(started.name);
          await started.stop?.();
          appsStopping.delete(started.name);
        }),
      );
      // An event stream never finishes by itself: ended here, it does not hold the drain open.
      parts.eventLog.closeAll();
      const counts = await drain.drain(drainMs);
      // Aborted just before the root is let go: what the apps wait for after the drain and the
      // last writes start nothing once a next process may own the root.
      const letGo = new AbortController();
      // Waited for only now, so what a request still draining began is waited for too: an
      // exchange of credentials begun during the drain was not, when the connections app waited
      // for it as its stop began (connections-oauth-stop.test.ts "begun while a request still drains").
      const appsDraining = new Set<string>();
      const appsDrained = Promise.all(
        apps.map(async (started) => {
          if (!started.drained) return;
          appsDraining.add(started.name);
          await started.drained(letGo.signal);
          appsDraining.delete(started.name);
        }),
      );
      // Background work gets the requests' deadline too, and a second signal cuts it off: a
      // health probe to a hung remote would otherwise hold the stop for its own timeout, up to
      // 300 s, whatever the signals (test/integration/shutdown.test.ts "background work").
      // Then what their last events started in other apps, whose own stop may have returned
      // before those events came: an interrupted run's notification (tasks-stop-notice.test.ts).
      const finished = await settledBefore(
        Promise.all([jobsStopped, appsStopped, appsDrained]).then(() => parts.events.settled()),
        Math.max(0, startedMs + drainMs - clock()),
        stopForced,
        timers,
      );
      if (!finished) {
        log.warn(
          {
            jobs: scheduler.runningJobs(),
            apps: [...new Set([...appsStopping, ...appsDraining])],
            events: parts.events.inFlight(),
          },
          "shutdown left background work running: it was past the drain deadline or asked again",
        );
      }
      await parts.registries.close();
      await closeAppSources(apps);
      await parts.endpoint.close();
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
          stopForced,
          timers,
        ));
      letGo.abort();
      if (!lastWritten) {
        log.warn(
          { waitedMs: LAST_WRITES_MS },
          "shutdown did not wait longer for the last writes of what only memory held (or was asked again)",
        );
      }
      // Last: until here this process still owns the root (a restart waits or is refused).
      await parts.lock.release();
      log.info({ ...counts, ms: clock() - startedMs }, "shutdown finished");
      // Lines are written asynchronously (src/log.ts): out before close() says it is done.
      await flushLog(log);
    })();
    return closing;
  };
}

/**
 * Whether `work` settled within `deadlineMs` (on the instance's timers) and before `cutOff`;
 * false once either comes first. The work itself goes on: it is only no longer waited for.
 */
async function settledBefore(
  work: Promise<unknown>,
  deadlineMs: number,
  cutOff: Promise<void>,
  timers: Timers,
): Promise<boolean> {
  let cancel: (() => void) | undefined;
  const deadline = new Promise<false>((resolve) => {
    cancel = timers.after(deadlineMs, () => resolve(false));
  });
  try {
    return await Promise.race([
      // A failing stop still fails the shutdown, as it did when it was awaited alone.
      work.then(() => true),
      deadline,
      cutOff.then(() => false as const),
    ]);
  } finally {
    cancel?.();
  }
}
