import { describe, expect, it } from "vitest";
import { everyLeaseLocal } from "../../../../src/kernel/leases.ts";
import { Scheduler } from "../../../../src/kernel/scheduler.ts";
import type { Task } from "../../../../src/platform/tasks/model.ts";
import type { RunStart } from "../../../../src/platform/tasks/runner.ts";
import {
  catchUpFromMs,
  missedOf,
  missedSince,
  type ScheduleDeps,
  TaskSchedules,
} from "../../../../src/platform/tasks/schedule.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { eventually } from "../../../helpers/eventually.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { memoryLog } from "../../../helpers/memory-log.ts";
import { taskRecord } from "../../../helpers/task-records.ts";
import { bootTasksApp, recordingDispatch } from "../../../helpers/tasks-app.ts";
import { openTempRoot } from "../../../helpers/temp-root.ts";

const at = (iso: string) => Date.parse(iso);
const HOUR_MS = 3_600_000;
/** A task whose last schedule was 09:00 on 2026-12-07; its trigger is each test's. */
const RAN_AT_NINE = {
  id: "tsk_1",
  workspaceId: "ws_0000000000000001",
  ownerId: "usr_1",
  createdAt: "2026-12-01T00:00:00.000Z",
  lastScheduledAt: "2026-12-07T09:00:00.000Z",
} as Task;
const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

describe("missed schedules", () => {
  it("finds the first and the latest cron instant after the last one accounted for, in the trigger's zone", () => {
    // Paris 09:00 is 08:00Z before the 2026-03-29 change and 07:00Z after it.
    const trigger = { cron: "0 9 * * *", timezone: "Europe/Paris" };
    const missed = missedOf(trigger, at("2026-03-27T08:00:00Z"), at("2026-03-30T12:00:00Z"));
    expect([iso(missed?.firstMs), iso(missed?.latestMs)]).toEqual([
      "2026-03-28T08:00:00.000Z",
      "2026-03-30T07:00:00.000Z",
    ]);
  });

  it("finds nothing when no instant fell between, and counts an instant exactly at now", () => {
    const trigger = { cron: "0 * * * *", timezone: "UTC" };
    expect(missedOf(trigger, at("2026-01-01T01:00:00Z"), at("2026-01-01T01:59:59Z"))).toBeUndefined();
    expect(iso(missedOf(trigger, at("2026-01-01T01:00:00Z"), at("2026-01-01T02:00:00Z"))?.latestMs)).toBe(
      "2026-01-01T02:00:00.000Z",
    );
  });

  it("a cron instant exactly at now is the latest missed, as an interval's is, though it is not the first", () => {
    // Exactly at now: not due later either, since the job armed at now is due after it.
    const since = at("2026-12-05T09:00:00Z");
    const now = at("2026-12-07T09:00:00Z");
    const daily = missedOf({ cron: "0 9 * * *", timezone: "UTC" }, since, now);
    expect([iso(daily?.firstMs), iso(daily?.latestMs)]).toEqual([
      "2026-12-06T09:00:00.000Z",
      "2026-12-07T09:00:00.000Z",
    ]);
    expect(iso(missedOf({ everySeconds: 86_400 }, since, now)?.latestMs)).toBe("2026-12-07T09:00:00.000Z");
    // A millisecond before, it is still to come.
    expect(iso(missedOf({ cron: "0 9 * * *", timezone: "UTC" }, since, now - 1)?.latestMs)).toBe(
      "2026-12-06T09:00:00.000Z",
    );
  });

  it("steps an interval from the last instant, whole intervals only", () => {
    const missed = missedOf({ everySeconds: 60 }, at("2026-01-01T00:00:00Z"), at("2026-01-01T00:03:30Z"));
    expect([iso(missed?.firstMs), iso(missed?.latestMs)]).toEqual([
      "2026-01-01T00:01:00.000Z",
      "2026-01-01T00:03:00.000Z",
    ]);
    expect(
      missedOf({ everySeconds: 60 }, at("2026-01-01T00:00:00Z"), at("2026-01-01T00:00:59Z")),
    ).toBeUndefined();
  });

  it("reads from lastScheduledAt, and a task without a trigger has nothing missed", () => {
    const task = {
      createdAt: "2026-01-01T00:00:00.000Z",
      lastScheduledAt: "2026-01-01T05:00:00.000Z",
      trigger: { everySeconds: 3600 },
    } as Task;
    expect(iso(missedSince(task, at("2026-01-01T06:30:00Z"))?.firstMs)).toBe("2026-01-01T06:00:00.000Z");
    expect(
      missedSince({ ...task, trigger: undefined } as unknown as Task, at("2027-01-01T00:00:00Z")),
    ).toBeUndefined();
  });

  it("has nothing missed when the time it counts from is not a date, for a cron or an interval", () => {
    // A cron's made croner throw, an interval's a fire at NaN (tasks-boot-catch-up.test.ts).
    const task = { createdAt: "2026-01-01T00:00:00.000Z", lastScheduledAt: "yesterday" } as Task;
    const now = at("2026-01-02T00:00:00Z");
    expect(missedSince({ ...task, trigger: { cron: "0 * * * *", timezone: "UTC" } }, now)).toBeUndefined();
    expect(missedSince({ ...task, trigger: { everySeconds: 3600 } }, now)).toBeUndefined();
    expect(catchUpFromMs({ ...task, lastScheduledAt: undefined } as Task)).toBe(at("2026-01-01T00:00:00Z"));
  });
});

describe("arming a stored trigger", () => {
  function schedules() {
    const added: string[] = [];
    const { log, lines } = memoryLog();
    const scheduler = {
      add: (job: { name: string }) => void added.push(job.name),
      remove: () => undefined,
      has: () => false,
      isStopped: () => false,
    };
    const deps = { scheduler, log, minIntervalSeconds: 60 } as unknown as ScheduleDeps;
    return { armed: added, lines, schedules: new TaskSchedules(deps) };
  }
  const task = (trigger: Task["trigger"]) =>
    ({ id: "tsk_1", workspaceId: "ws_0000000000000001", trigger }) as Task;

  it("arms a trigger today's rules allow", () => {
    const { armed, schedules: s } = schedules();
    s.arm(task({ cron: "0 9 * * 1-5", timezone: "UTC" }));
    s.arm(task({ everySeconds: 60 }));
    expect(armed).toHaveLength(2);
  });

  it.each([
    ["a cron every second", { cron: "* * * * * *", timezone: "UTC" }],
    ["a cron that never fires", { cron: "0 0 30 2 *", timezone: "UTC" }],
    ["an interval under the minimum", { everySeconds: 1 }],
    // Written by hand: neither shape, or an interval that is no number (armed every NaN ms).
    ["a trigger of neither shape", {}],
    ["an interval that is not a number", { everySeconds: "60" }],
    ["a cron with fields beside it", { cron: "0 9 * * *", timezone: "UTC", everySeconds: 60 }],
  ])("does not arm %s stored before the rule, and says why in the log", (_case, trigger) => {
    const { armed, lines, schedules: s } = schedules();
    s.arm(task(trigger as Task["trigger"]));
    expect(armed).toEqual([]);
    expect(lines).toEqual([
      expect.objectContaining({ msg: "task trigger not armed", taskId: "tsk_1", reason: expect.any(String) }),
    ]);
  });
});

describe("a schedule's fire", () => {
  /** A task that runs every hour, last scheduled at midnight. */
  const HOURLY = {
    id: "tsk_1",
    workspaceId: "ws_0000000000000001",
    ownerId: "usr_1",
    trigger: { everySeconds: 3600 },
    createdAt: "2026-01-01T00:00:00.000Z",
    lastScheduledAt: "2026-01-01T00:00:00.000Z",
  } as Task;

  it("no catch-up for a trigger not armed: one today's rules refuse does not run at every boot", async () => {
    const started: string[] = [];
    const stored = (id: string, trigger: Task["trigger"]) =>
      ({
        id,
        workspaceId: "ws_0000000000000001",
        ownerId: "usr_1",
        trigger,
        createdAt: "2026-01-01T00:00:00.000Z",
        lastScheduledAt: "2026-01-01T00:00:00.000Z",
      }) as Task;
    // Stored every 60 s; tasks.minIntervalSeconds has since been raised to 3600.
    const refused = stored("tsk_refused", { everySeconds: 60 });
    const allowed = stored("tsk_allowed", { everySeconds: 3600 });
    const deps = {
      scheduler: { add: () => undefined, remove: () => undefined, has: () => false, isStopped: () => false },
      workspaces: { get: () => ({}), roleOf: () => "member" },
      users: { isDeactivated: () => false },
      store: {
        taskIn: async (_ws: string, id: string) => (id === refused.id ? refused : allowed),
        update: async (task: Task, change: (current: Task) => Task) => change(task),
        whileExists: async (task: Task, start: (current: Task) => Promise<unknown>) => start(task),
      },
      runner: { start: async (task: Task) => void started.push(task.id) },
      clock: () => Date.parse("2026-01-01T02:30:00Z"),
      log: memoryLog().log,
      minIntervalSeconds: 3600,
    } as unknown as ScheduleDeps;
    await new TaskSchedules(deps).armAll([refused, allowed]);
    expect(started).toEqual(["tsk_allowed"]);
  });

  it("records the instant as acted on before its run starts, so a crash between never runs it twice", async () => {
    const calls: string[] = [];
    const task = HOURLY;
    const deps = {
      scheduler: { add: () => undefined, remove: () => undefined, has: () => false, isStopped: () => false },
      workspaces: { get: () => ({}), roleOf: () => "member" },
      users: { isDeactivated: () => false },
      store: {
        taskIn: async () => task,
        update: async (current: Task, change: (current: Task) => Task) => {
          calls.push("lastScheduledAt recorded");
          return change(current);
        },
        whileExists: async (_task: Task, start: (current: Task) => Promise<unknown>) => start(task),
      },
      runner: { start: async () => void calls.push("run started") },
      clock: () => Date.parse("2026-01-01T02:30:00Z"),
      log: memoryLog().log,
      minIntervalSeconds: 60,
    } as unknown as ScheduleDeps;
    await new TaskSchedules(deps).armAll([task]);
    expect(calls).toEqual(["lastScheduledAt recorded", "run started"]);
  });

  it("a fire racing a delete: a task gone or untriggered when its instant is recorded is not run", async () => {
    const task = HOURLY;
    const { trigger: _trigger, ...untriggered } = task;
    // What the fire's update finds: the task deleted since the fire read it, or its trigger removed.
    for (const found of [undefined, untriggered as Task]) {
      const started: string[] = [];
      const removed: string[] = [];
      const deps = {
        scheduler: {
          add: () => undefined,
          remove: (name: string) => void removed.push(name),
          has: () => false,
          isStopped: () => false,
        },
        workspaces: { get: () => ({}), roleOf: () => "member" },
        users: { isDeactivated: () => false },
        store: {
          taskIn: async () => task,
          update: async () => found,
          whileExists: async (_task: Task, start: (current: Task) => Promise<unknown>) =>
            found && start(found),
        },
        runner: { start: async (run: Task) => void started.push(run.id) },
        clock: () => Date.parse("2026-01-01T02:30:00Z"),
        log: memoryLog().log,
        minIntervalSeconds: 60,
      } as unknown as ScheduleDeps;
      await new TaskSchedules(deps).armAll([task]);
      expect(started).toEqual([]);
      expect(removed.at(-1)).toBe("task ws_0000000000000001 tsk_1");
    }
  });

  it("a fire after a suspend records the instant it was due, and the latest with the first when several passed", async () => {
    // Timers on the monotonic clock (FakeTime's), the wall clock that plus what suspends added.
    const time = new FakeTime(Date.parse("2026-01-01T08:30:00Z"));
    let suspendedMs = 0;
    const wall = () => time.clock() + suspendedMs;
    const log = memoryLog().log;
    const scheduler = new Scheduler({ clock: wall, timers: time.timers, leases: everyLeaseLocal, log });
    // Last run at 08:00, and each fire's record kept: a fire catches up the instants after it.
    let task = {
      ...HOURLY,
      trigger: { cron: "0 * * * *", timezone: "UTC" },
      lastScheduledAt: "2026-01-01T08:00:00.000Z",
    } as Task;
    const started: RunStart[] = [];
    const deps = {
      scheduler,
      workspaces: { get: () => ({}), roleOf: () => "member" },
      users: { isDeactivated: () => false },
      store: {
        taskIn: async () => task,
        update: async (current: Task, change: (current: Task) => Task) => {
          task = change(current);
          return task;
        },
        whileExists: async (current: Task, start: (current: Task) => Promise<unknown>) => start(current),
      },
      runner: { start: async (_task: Task, start: RunStart) => void started.push(start) },
      clock: wall,
      log,
      minIntervalSeconds: 60,
    } as unknown as ScheduleDeps;
    new TaskSchedules(deps).arm(task);
    // Suspended 08:30 to 08:50, then 15 minutes awake: the 09:00 run is at 09:00.
    suspendedMs += 20 * 60_000;
    await time.advance(15 * 60_000);
    expect(started.map((run) => [run.scheduledFor, run.missedSince])).toEqual([
      ["2026-01-01T09:00:00.000Z", undefined],
    ]);
    // Suspended 09:05 to 12:15, across 10:00, 11:00 and 12:00: one run on waking, for 12:00.
    suspendedMs += (3 * 60 + 10) * 60_000;
    await time.advance(60_000);
    expect(started.slice(1).map((run) => [run.scheduledFor, run.missedSince])).toEqual([
      ["2026-01-01T12:00:00.000Z", "2026-01-01T10:00:00.000Z"],
    ]);
    await scheduler.stop();
  });
});

describe("a boot exactly at a cron instant", () => {
  it("runs the instant once, as the latest missed, and the job goes on from the next", async () => {
    const time = new FakeTime(Date.parse("2026-12-07T09:00:00Z"));
    const log = memoryLog().log;
    const scheduler = new Scheduler({ clock: time.clock, timers: time.timers, leases: everyLeaseLocal, log });
    let task = {
      id: "tsk_1",
      workspaceId: "ws_0000000000000001",
      ownerId: "usr_1",
      trigger: { cron: "0 9 * * *", timezone: "UTC" },
      createdAt: "2026-12-01T00:00:00.000Z",
      lastScheduledAt: "2026-12-05T09:00:00.000Z",
    } as Task;
    const started: RunStart[] = [];
    const deps = {
      scheduler,
      workspaces: { get: () => ({}), roleOf: () => "member" },
      users: { isDeactivated: () => false },
      store: {
        taskIn: async () => task,
        update: async (current: Task, change: (current: Task) => Task) => {
          task = change(current);
          return task;
        },
        whileExists: async (current: Task, start: (current: Task) => Promise<unknown>) => start(current),
      },
      runner: { start: async (_task: Task, start: RunStart) => void started.push(start) },
      clock: time.clock,
      log,
      minIntervalSeconds: 60,
    } as unknown as ScheduleDeps;
    await new TaskSchedules(deps).armAll([task]);
    await time.advance(24 * 3_600_000);
    expect(started.map((run) => [run.scheduledFor, run.missedSince])).toEqual([
      ["2026-12-07T09:00:00.000Z", "2026-12-06T09:00:00.000Z"],
      ["2026-12-08T09:00:00.000Z", undefined],
    ]);
    await scheduler.stop();
  });
});

describe("a job armed after the wall clock stepped back", () => {
  /** Arms `stored` at `nowIso` on a real scheduler over a store of that one task; the runs it starts. */
  function armedAt(nowIso: string, stored: Task) {
    const time = new FakeTime(Date.parse(nowIso));
    const log = memoryLog().log;
    const scheduler = new Scheduler({ clock: time.clock, timers: time.timers, leases: everyLeaseLocal, log });
    let task = stored;
    const started: RunStart[] = [];
    const deps = {
      scheduler,
      workspaces: { get: () => ({}), roleOf: () => "member" },
      users: { isDeactivated: () => false },
      store: {
        taskIn: async () => task,
        update: async (current: Task, change: (current: Task) => Task) => {
          task = change(current);
          return task;
        },
        whileExists: async (current: Task, start: (current: Task) => Promise<unknown>) => start(current),
      },
      runner: { start: async (_task: Task, start: RunStart) => void started.push(start) },
      clock: time.clock,
      log,
      minIntervalSeconds: 60,
    } as unknown as ScheduleDeps;
    new TaskSchedules(deps).arm(task);
    return { time, scheduler, started };
  }
  const ran = (started: RunStart[]) => started.map((run) => run.scheduledFor);

  it("passes over a cron instant at or before lastScheduledAt, and runs the next", async () => {
    // 09:00 ran; an NTP step put the clock back to 08:05 and the job was armed again (a restart).
    const { time, scheduler, started } = armedAt("2026-12-07T08:05:00Z", {
      ...RAN_AT_NINE,
      trigger: { cron: "0 9 * * *", timezone: "UTC" },
    });
    await time.advance(HOUR_MS);
    expect(ran(started)).toEqual([]);
    await time.advance(24 * HOUR_MS);
    expect(ran(started)).toEqual(["2026-12-08T09:00:00.000Z"]);
    await scheduler.stop();
  });

  it("holds an interval back by no more than its interval: its instants are counted from when it was armed", async () => {
    const { time, scheduler, started } = armedAt("2026-12-07T08:05:00Z", {
      ...RAN_AT_NINE,
      trigger: { everySeconds: 600 },
    });
    await time.advance(10 * 60_000);
    expect(ran(started)).toEqual(["2026-12-07T08:15:00.000Z"]);
    await scheduler.stop();
  });
});

describe("a fire racing a graceful stop", () => {
  it("an instant whose run the stop refused is not lost: after the restart it runs once, with missedSince", async () => {
    const owner = `usr_${"b".repeat(24)}`;
    const t = await openTempRoot("task-schedule-stop", owner);
    const time = new FakeTime(Date.parse("2026-01-01T08:30:00Z"));
    const { dispatch, called } = recordingDispatch();
    /** One process's tasks app over the root. */
    const boot = () => bootTasksApp(t.layout, t.ws, time, dispatch);
    try {
      const first = await boot();
      await first.schedules.armAll(first.triggered);
      const at = time.clock();
      const task = await first.store.create(
        taskRecord(t.ws, owner, at, {
          name: "hourly",
          trigger: { cron: "0 * * * *", timezone: "UTC" },
          lastScheduledAt: new Date(at).toISOString(),
        }),
        NO_CALLER,
      );
      first.schedules.arm(task);
      // The stop begins as the 09:00 fire has recorded its instant, before its run starts.
      let stopped: Promise<void> | undefined;
      const update = first.store.update.bind(first.store);
      first.store.update = async (...args) => {
        const next = await update(...args);
        stopped ??= first.stop();
        return next;
      };
      await time.advance(30 * 60_000);
      await eventually(() => expect(stopped).toBeDefined());
      await stopped;
      expect(called).toEqual([]);

      // Back at 09:10: the 09:00 instant runs once, saying it stands for a schedule missed.
      await time.advance(10 * 60_000);
      const second = await boot();
      await second.schedules.armAll(second.triggered);
      const [runId, ...more] = await second.store.runIds(task);
      expect(more).toEqual([]);
      expect(await second.store.run(t.ws, runId as string)).toMatchObject({
        trigger: "schedule",
        scheduledFor: "2026-01-01T09:00:00.000Z",
        missedSince: "2026-01-01T09:00:00.000Z",
      });
      await second.stop();
    } finally {
      await t.remove();
    }
  });
});
