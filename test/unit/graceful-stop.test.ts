import { expect, it } from "vitest";
import { REPEAT_SIGNAL_MS, stopOnRequest } from "../../src/cli.ts";
import {
  BACKGROUND_FLOOR_MS,
  type BuiltParts,
  closeBuilt,
  gracefulStop,
  type StopParts,
} from "../../src/graceful-stop.ts";
import { EventBus } from "../../src/kernel/events.ts";
import { capturingLogger } from "../helpers/atrium.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { gate } from "../helpers/gate.ts";

// ADR 0137 (amended): the stop writes what only memory holds before it lets the root go, for
// LAST_WRITES_MS at most and not at all after a second signal. Waiting alone was bounded: the
// writes started after a second signal too, and went on past the bound while the lock was
// released, so a next process could own the root while this one wrote in it.

/** A stop whose parts record what happens; `lastWrites` and the drain are the test's to give. */
function stopParts(
  events: string[],
  overrides: Pick<StopParts, "lastWrites" | "drain"> & Partial<StopParts>,
): StopParts {
  const time = new FakeTime();
  const log = capturingLogger().log;
  return {
    scheduler: { stop: async () => undefined, runningJobs: () => [] },
    apps: [],
    registries: { close: async () => undefined },
    endpoint: { close: async () => undefined },
    eventLog: { closeAll: () => undefined },
    events: new EventBus(log),
    lock: { release: async () => void events.push("lock released") },
    drainSeconds: 30,
    clock: time.clock,
    timers: time.timers,
    log,
    ...overrides,
  } as unknown as StopParts;
}

it("after a second signal the last writes never start, and the lock is released", async () => {
  const events: string[] = [];
  const drained = gate();
  const { close } = gracefulStop(
    stopParts(events, {
      lastWrites: async () => void events.push("last writes started"),
      drain: {
        inFlight: () => 1,
        drain: async () => {
          await drained.promise;
          return { finished: 1, cutOff: 0 };
        },
        force: () => drained.open(),
      } as unknown as StopParts["drain"],
    }),
  );
  const first = close();
  // The operator asks again while requests still drain.
  const second = close();
  await Promise.all([first, second]);
  expect(events).toEqual(["lock released"]);
});

it("last writes past their bound are aborted before the lock is released", async () => {
  const events: string[] = [];
  const time = new FakeTime();
  const started = gate();
  let signal: AbortSignal | undefined;
  const { close } = gracefulStop(
    stopParts(events, {
      clock: time.clock,
      timers: time.timers,
      // A hung disk: the writes never end by themselves.
      lastWrites: (given) => {
        signal = given;
        started.open();
        return new Promise<void>(() => undefined);
      },
      drain: {
        inFlight: () => 0,
        drain: async () => ({ finished: 0, cutOff: 0 }),
        force: () => undefined,
      } as unknown as StopParts["drain"],
      lock: {
        release: async () => void events.push(`lock released, writes aborted: ${signal?.aborted}`),
      } as unknown as StopParts["lock"],
    }),
  );
  const stopped = close();
  await started.promise;
  await time.advance(2_000);
  await stopped;
  expect(events).toEqual(["lock released, writes aborted: true"]);
});

// What requests began that must end in this process (an exchange of credentials) is waited for
// only once they are done, so one a request still draining began is waited for too
// (test/integration/connections-oauth-stop.test.ts "begun while a request still drains").
it("an app's drained() is waited for after the drain and before the sources close; its signal aborts before the lock goes", async () => {
  const events: string[] = [];
  let letGo: AbortSignal | undefined;
  const { close } = gracefulStop(
    stopParts(events, {
      lastWrites: async () => undefined,
      drain: {
        inFlight: () => 1,
        drain: async () => {
          events.push("requests drained");
          return { finished: 1, cutOff: 0 };
        },
        force: () => undefined,
      } as unknown as StopParts["drain"],
      apps: [
        {
          name: "connections",
          tools: {},
          source: { close: async () => undefined },
          drained: async (signal: AbortSignal) => {
            letGo = signal;
            events.push("app waited");
          },
        },
      ] as unknown as StopParts["apps"],
      registries: {
        close: async () => void events.push("sources closed"),
      } as unknown as StopParts["registries"],
      lock: {
        release: async () => void events.push(`lock released, let go: ${letGo?.aborted}`),
      } as unknown as StopParts["lock"],
    }),
  );
  await close();
  expect(events).toEqual(["requests drained", "app waited", "sources closed", "lock released, let go: true"]);
});

// ADR 0093: what is left running when the stop gives up waiting is logged. The work an event
// started in a subscriber (a notification's post on a hung disk) was waited for but went unnamed.
it("names the events whose subscribers' work is still running when the stop stops waiting", async () => {
  const time = new FakeTime();
  const { log, lines } = capturingLogger();
  const bus = new EventBus(log);
  bus.subscribe({ types: ["member.removed"] }, () => new Promise<void>(() => undefined));
  bus.publish({ type: "member.removed", workspaceId: "ws", principalId: "p" } as never);
  const { close } = gracefulStop(
    stopParts([], {
      clock: time.clock,
      timers: time.timers,
      log,
      events: bus,
      drainSeconds: 10,
      lastWrites: async () => undefined,
      drain: {
        inFlight: () => 0,
        drain: async () => ({ finished: 0, cutOff: 0 }),
        force: () => undefined,
      } as unknown as StopParts["drain"],
    }),
  );
  const stopped = close();
  while (time.armed() === 0) await new Promise((resolve) => setImmediate(resolve));
  await time.advance(10_000);
  await stopped;
  expect(lines).toContainEqual(
    expect.objectContaining({
      msg: "shutdown left background work running: it was past the drain deadline or asked again",
      events: ["member.removed"],
    }),
  );
});

/** What a boot built before it failed; the test gives its apps and its event bus. */
function builtParts(overrides: Partial<BuiltParts> & Pick<BuiltParts, "events">): BuiltParts {
  return {
    scheduler: { stop: async () => undefined, runningJobs: () => [] },
    apps: [],
    registries: { close: async () => undefined },
    drainSeconds: 30,
    timers: new FakeTime().timers,
    ...overrides,
  } as unknown as BuiltParts;
}

// ADR 0093 (amended): a failed boot's close waits, as the stop does, for what the apps' stops
// started through events before its caller lets go of the root, and goes on when one part fails.
it("a failed boot's close waits for the events' work after a failing app stop, then closes the sources", async () => {
  const { log, lines } = capturingLogger();
  const bus = new EventBus(log);
  const steps: string[] = [];
  const written = gate();
  bus.subscribe({ types: ["member.removed"] }, async () => {
    await written.promise;
    steps.push("event work ended");
  });
  const closing = closeBuilt(
    builtParts({
      events: bus,
      apps: [
        { name: "broken", tools: {}, stop: async () => Promise.reject(new Error("stop failed")) },
        {
          name: "announcer",
          tools: {},
          stop: async () => bus.publish({ type: "member.removed", workspaceId: "ws", principalId: "p" }),
        },
      ] as unknown as BuiltParts["apps"],
      registries: {
        close: async () => void steps.push("sources closed"),
      } as unknown as BuiltParts["registries"],
    }),
    log,
  );
  // Opened only once every step a close makes without waiting has run.
  setImmediate(() => written.open());
  await closing;
  expect(steps).toEqual(["event work ended", "sources closed"]);
  expect(lines).toContainEqual(
    expect.objectContaining({ msg: "closing what a failed boot had started failed" }),
  );
});

it("a failed boot's close waits no longer than drainSeconds, and names the events whose work it left", async () => {
  const time = new FakeTime();
  const { log, lines } = capturingLogger();
  const bus = new EventBus(log);
  bus.subscribe({ types: ["member.removed"] }, () => new Promise<void>(() => undefined));
  bus.publish({ type: "member.removed", workspaceId: "ws", principalId: "p" });
  let closed = false;
  const closing = closeBuilt(builtParts({ events: bus, drainSeconds: 10, timers: time.timers }), log).then(
    () => {
      closed = true;
    },
  );
  while (time.armed() === 0 && !closed) await new Promise((resolve) => setImmediate(resolve));
  await time.advance(10_000);
  await closing;
  expect(lines).toContainEqual(
    expect.objectContaining({
      msg: "closing a failed boot left background work running: it was past the drain deadline",
      events: ["member.removed"],
    }),
  );
});

// ADR 0093 (amended again): every step before the lock goes ends even when one before it failed,
// and the stop still fails. A source that failed to close made close() reject at once: the
// endpoint stayed open and the lock was left for the next boot to find stale.
it("a part that fails to close is logged, the rest still closes and the lock is released; close() rejects with it", async () => {
  const events: string[] = [];
  const { log, lines } = capturingLogger();
  const { close } = gracefulStop(
    stopParts(events, {
      log,
      lastWrites: async () => undefined,
      drain: {
        inFlight: () => 0,
        drain: async () => ({ finished: 0, cutOff: 0 }),
        force: () => undefined,
      } as unknown as StopParts["drain"],
      registries: {
        close: async () => Promise.reject(new Error("a source would not close")),
      } as unknown as StopParts["registries"],
      endpoint: {
        close: async () => void events.push("endpoint closed"),
      } as unknown as StopParts["endpoint"],
    }),
  );
  await expect(close()).rejects.toThrow("a source would not close");
  expect(events).toEqual(["endpoint closed", "lock released"]);
  expect(lines).toContainEqual(
    expect.objectContaining({
      msg: "a part of the shutdown failed; the rest still ends",
      part: "workspace sources",
    }),
  );
  expect(lines).toContainEqual(expect.objectContaining({ msg: "shutdown finished", failed: 1 }));
});

// ADR 0093 (amended again): drainSeconds 0 drains no request, but it does not let the lock go while
// an app's stop (a run recorded interrupted) still writes in the root: background work is waited
// for BACKGROUND_FLOOR_MS at least, whatever the drain. It was waited for not at all.
const closes = {
  "a graceful stop": (time: FakeTime, events: string[], apps: unknown[]) =>
    gracefulStop(
      stopParts(events, {
        clock: time.clock,
        timers: time.timers,
        drainSeconds: 0,
        apps: apps as StopParts["apps"],
        lastWrites: async () => undefined,
        drain: {
          inFlight: () => 0,
          drain: async () => ({ finished: 0, cutOff: 0 }),
          force: () => undefined,
        } as unknown as StopParts["drain"],
      }),
    ).close(),
  // The lock is its caller's to release (server.ts): closed is when it goes.
  "a failed boot's close": async (time: FakeTime, events: string[], apps: unknown[]) => {
    const bus = new EventBus(capturingLogger().log);
    await closeBuilt(
      builtParts({ events: bus, drainSeconds: 0, timers: time.timers, apps: apps as BuiltParts["apps"] }),
      capturingLogger().log,
    );
    events.push("lock released");
  },
};

it.for(Object.keys(closes) as (keyof typeof closes)[])(
  "%s with drainSeconds 0 still waits for an app's stop before the lock goes",
  async (close) => {
    const time = new FakeTime();
    const events: string[] = [];
    const written = gate();
    const tasks = {
      name: "tasks",
      tools: {},
      source: { close: async () => undefined },
      stop: async () => {
        await written.promise;
        events.push("run recorded interrupted");
      },
    };
    const closed = closes[close](time, events, [tasks]);
    while (time.armed() === 0) await new Promise((resolve) => setImmediate(resolve));
    // Whatever is due at once fires: the deadline of a drain of 0 was.
    await time.advance(0);
    written.open();
    await closed;
    expect(events).toEqual(["run recorded interrupted", "lock released"]);
  },
);

it.for(Object.keys(closes) as (keyof typeof closes)[])(
  "%s with drainSeconds 0 waits for an app's stop that never ends BACKGROUND_FLOOR_MS, no longer",
  async (close) => {
    const time = new FakeTime();
    const events: string[] = [];
    const hung = {
      name: "tasks",
      tools: {},
      source: { close: async () => undefined },
      stop: () => new Promise<void>(() => undefined),
    };
    const closed = closes[close](time, events, [hung]);
    while (time.armed() === 0) await new Promise((resolve) => setImmediate(resolve));
    await time.advance(BACKGROUND_FLOOR_MS - 1);
    expect(events).toEqual([]);
    await time.advance(1);
    await closed;
    expect(events).toEqual(["lock released"]);
  },
);

/** A stop whose requests drain until forced, counting the times it is forced. */
function drainingStop(time: FakeTime) {
  const drained = gate();
  const counts = { forced: 0 };
  const stopping = gracefulStop(
    stopParts([], {
      clock: time.clock,
      timers: time.timers,
      lastWrites: async () => undefined,
      drain: {
        inFlight: () => 1,
        drain: async () => {
          await drained.promise;
          return { finished: 1, cutOff: 0 };
        },
        force: () => {
          counts.forced++;
          drained.open();
        },
      } as unknown as StopParts["drain"],
    }),
  );
  return { stopping, counts, finish: () => drained.open() };
}

// The stop a lost lock began (locked-boot.ts) was the instance's close(), so the supervisor's one
// SIGTERM that came while it drained was close()'s second call, a second signal's: it cut off
// every request still draining; and a lock lost during a signal's stop cut that one off (review).
it("one signal during the stop a lost lock began joins it; only a second signal cuts it short", async () => {
  const time = new FakeTime();
  const { stopping, counts, finish } = drainingStop(time);
  const signal = stopOnRequest(stopping, {
    log: capturingLogger().log,
    clock: time.clock,
    exit: () => undefined,
  });
  const stopped = stopping.stop(); // the heartbeat found the lock lost
  signal("SIGTERM"); // the supervisor's stop
  expect(counts.forced).toBe(0);
  time.jump(REPEAT_SIGNAL_MS);
  signal("SIGTERM"); // the operator, a second later, asks again
  expect(counts.forced).toBe(1);
  finish();
  await stopped;
});

it("a lock lost during a signal's stop joins it, cutting nothing short", async () => {
  const time = new FakeTime();
  const { stopping, counts, finish } = drainingStop(time);
  const exits: number[] = [];
  stopOnRequest(stopping, {
    log: capturingLogger().log,
    clock: time.clock,
    exit: (code) => exits.push(code),
  })("SIGTERM");
  const lostLockStop = stopping.stop();
  expect(counts.forced).toBe(0);
  finish();
  await lostLockStop;
  expect(exits).toEqual([0]);
});
