import { describe, expect, it } from "vitest";
import type { LeaseHolder } from "../../../src/kernel/leases.ts";
import { everyLeaseLocal } from "../../../src/kernel/leases.ts";
import { Scheduler } from "../../../src/kernel/scheduler.ts";
import { FakeTime, settle } from "../../helpers/fake-time.ts";
import { memoryLog } from "../../helpers/memory-log.ts";

const MINUTE_MS = 60_000;

function setup(leases: LeaseHolder = everyLeaseLocal) {
  const time = new FakeTime(Date.UTC(2026, 0, 1, 0, 0, 30));
  const { log, lines } = memoryLog();
  const scheduler = new Scheduler({ clock: time.clock, timers: time.timers, leases, log });
  return { time, lines, scheduler };
}

describe("Scheduler", () => {
  it("runs an interval job once per interval, not before", async () => {
    const { time, scheduler } = setup();
    let runs = 0;
    scheduler.add({ name: "tick", schedule: { everyMs: 1000 }, run: async () => void runs++ });
    await time.advance(999);
    expect(runs).toBe(0);
    await time.advance(1);
    expect(runs).toBe(1);
    await time.advance(2000);
    await settle();
    expect(runs).toBe(3);
    await scheduler.stop();
  });

  it("after a suspension that missed several intervals, runs once, then keeps its interval from then", async () => {
    const { time, scheduler } = setup();
    let runs = 0;
    scheduler.add({ name: "tick", schedule: { everyMs: 1000 }, run: async () => void runs++ });
    time.jump(5500);
    await time.advance(0);
    expect(runs).toBe(1);
    await time.advance(999);
    expect(runs).toBe(1);
    await time.advance(1);
    expect(runs).toBe(2);
    await scheduler.stop();
  });

  it("a wall clock stepped back delays an interval job by one interval, not by the size of the step", async () => {
    // The timers wait in real (monotonic) time while the wall clock, the one the scheduler reads,
    // is stepped back an hour after the first run, as an NTP correction does.
    const time = new FakeTime(Date.UTC(2026, 0, 1, 0, 0, 30));
    let stepMs = 0;
    const wall = () => time.clock() + stepMs;
    const scheduler = new Scheduler({
      clock: wall,
      timers: time.timers,
      leases: everyLeaseLocal,
      log: memoryLog().log,
    });
    let runs = 0;
    scheduler.add({ name: "health", schedule: { everyMs: 200 }, run: async () => void runs++ });
    await time.advance(200);
    expect(runs).toBe(1);
    stepMs = -60 * MINUTE_MS;
    await time.advance(400);
    expect(runs).toBe(2);
    await time.advance(200);
    expect(runs).toBe(3);
    await scheduler.stop();
  });

  /**
   * The scheduler as the machine runs it: FakeTime's timers stand for Node's, which run on the
   * monotonic clock, and its wall clock is that plus `stepMs`: a suspend or an NTP step moves the
   * wall clock alone.
   */
  function onWallClock(startIso: string) {
    const time = new FakeTime(Date.parse(startIso));
    const wall = { stepMs: 0 };
    const clock = () => time.clock() + wall.stepMs;
    const scheduler = new Scheduler({
      clock,
      timers: time.timers,
      leases: everyLeaseLocal,
      log: memoryLog().log,
    });
    const runs: { atIso: string; scheduledIso: string }[] = [];
    const add = (cron: string) =>
      scheduler.add({
        name: cron,
        schedule: { cron, timezone: "UTC" },
        workspaces: () => ["ws_0000000000000001"],
        run: async (_workspaceId, scheduledMs) =>
          void runs.push({
            atIso: new Date(clock()).toISOString(),
            scheduledIso: new Date(scheduledMs).toISOString(),
          }),
      });
    return { time, wall, scheduler, runs, add };
  }

  it("a daily 09:00 job after an 8 h suspend overnight runs at 09:00, not 8 h late", async () => {
    const { time, wall, scheduler, runs, add } = onWallClock("2026-01-01T23:00:00Z");
    add("0 9 * * *");
    // Suspended from 23:00 to 07:00: no timer moved, the wall clock did.
    wall.stepMs += 8 * 60 * MINUTE_MS;
    await time.advance(2 * 60 * MINUTE_MS - 1);
    expect(runs).toEqual([]);
    await time.advance(1);
    expect(runs).toEqual([{ atIso: "2026-01-02T09:00:00.000Z", scheduledIso: "2026-01-02T09:00:00.000Z" }]);
    await scheduler.stop();
  });

  it("a wall clock stepped 30 min forward at 09:30 runs an hourly job within a minute of 10:00, not at 10:30", async () => {
    const { time, wall, scheduler, runs, add } = onWallClock("2026-01-01T09:00:00Z");
    add("0 * * * *");
    await time.advance(30 * MINUTE_MS);
    wall.stepMs += 30 * MINUTE_MS;
    await time.advance(MINUTE_MS);
    expect(runs).toHaveLength(1);
    expect(runs[0]?.scheduledIso).toBe("2026-01-01T10:00:00.000Z");
    expect(Date.parse(runs[0]?.atIso ?? "")).toBeLessThanOrEqual(Date.parse("2026-01-01T10:01:00Z"));
    await scheduler.stop();
  });

  it("a job due while the machine was suspended runs on waking, told the instant it was due", async () => {
    const { time, wall, scheduler, runs, add } = onWallClock("2026-01-01T08:00:00Z");
    add("0 9 * * *");
    await time.advance(30 * MINUTE_MS);
    // Suspended from 08:30 to 10:30, across 09:00.
    wall.stepMs += 2 * 60 * MINUTE_MS;
    await time.advance(MINUTE_MS);
    expect(runs).toHaveLength(1);
    expect(runs[0]?.scheduledIso).toBe("2026-01-01T09:00:00.000Z");
    expect(Date.parse(runs[0]?.atIso ?? "")).toBeGreaterThan(Date.parse("2026-01-01T10:30:00Z"));
    await scheduler.stop();
  });

  it("forgets a removed job: nothing more runs, and its name can be added again", async () => {
    const { time, scheduler } = setup();
    let runs = 0;
    scheduler.add({ name: "tick", schedule: { everyMs: 1000 }, run: async () => void runs++ });
    await time.advance(1000);
    expect(scheduler.remove("tick")).toBe(true);
    expect(scheduler.has("tick")).toBe(false);
    await time.advance(5000);
    expect(runs).toBe(1);
    expect(scheduler.remove("tick")).toBe(false);
    let again = 0;
    scheduler.add({ name: "tick", schedule: { everyMs: 1000 }, run: async () => void again++ });
    await time.advance(1000);
    expect([runs, again]).toEqual([1, 1]);
    await scheduler.stop();
  });

  it("runs a cron job at the times croner computes for the expression", async () => {
    const { time, scheduler } = setup();
    const at: string[] = [];
    scheduler.add({
      name: "every-five",
      schedule: { cron: "*/5 * * * *", timezone: "UTC" },
      run: async () => void at.push(new Date(time.clock()).toISOString()),
    });
    await time.advance(11 * MINUTE_MS);
    await settle();
    expect(at).toEqual(["2026-01-01T00:05:00.000Z", "2026-01-01T00:10:00.000Z"]);
    await scheduler.stop();
  });

  it("reaches a cron date further away than one Node timer can wait", async () => {
    const { time, scheduler } = setup();
    let runs = 0;
    // Once a year, on 1 March: about 59 days away, beyond a timer's 24.8-day limit.
    scheduler.add({
      name: "yearly",
      schedule: { cron: "0 0 1 3 *", timezone: "UTC" },
      run: async () => void runs++,
    });
    await time.advance(30 * 24 * 60 * MINUTE_MS);
    expect(runs).toBe(0);
    await time.advance(30 * 24 * 60 * MINUTE_MS);
    expect(runs).toBe(1);
    await scheduler.stop();
  });

  it("skips and logs a run that falls due while the previous one is still going", async () => {
    const { time, lines, scheduler } = setup();
    let started = 0;
    let finish = () => {};
    scheduler.add({
      name: "slow",
      schedule: { everyMs: 1000 },
      run: () => {
        started++;
        return new Promise<void>((resolve) => {
          finish = resolve;
        });
      },
    });
    await time.advance(1000);
    await time.advance(1000);
    expect(started).toBe(1);
    expect(lines.some((l) => l.job === "slow" && String(l.msg).includes("skipped"))).toBe(true);
    finish();
    await settle();
    await time.advance(1000);
    expect(started).toBe(2);
    finish();
    await scheduler.stop();
  });

  it("logs a throwing job and keeps its schedule", async () => {
    const { time, lines, scheduler } = setup();
    let runs = 0;
    scheduler.add({
      name: "broken",
      schedule: { everyMs: 1000 },
      run: async () => {
        runs++;
        throw new Error("disk gone");
      },
    });
    await time.advance(1000);
    await settle();
    await time.advance(1000);
    await settle();
    expect(runs).toBe(2);
    const failures = lines.filter((l) => l.job === "broken" && String(l.msg).includes("failed"));
    expect(failures).toHaveLength(2);
    expect(failures[0]).toMatchObject({ err: { message: "disk gone" } });
    await scheduler.stop();
  });

  it("does per-workspace work only for the workspaces whose lease it holds, and one failure spares the rest", async () => {
    const held = new Set(["ws_0000000000000001", "ws_0000000000000003"]);
    const { time, scheduler } = setup({ holds: (id) => held.has(id) });
    const done: string[] = [];
    scheduler.add({
      name: "per-workspace",
      schedule: { everyMs: 1000 },
      workspaces: () => ["ws_0000000000000001", "ws_0000000000000002", "ws_0000000000000003"],
      run: async (workspaceId) => {
        if (workspaceId === "ws_0000000000000001") throw new Error("one bad workspace");
        done.push(workspaceId);
      },
    });
    await time.advance(1000);
    await settle();
    expect(done).toEqual(["ws_0000000000000003"]);
    await scheduler.stop();
  });

  it("does as many workspaces at once as the job asks, so one that hangs holds up only its own turn", async () => {
    const { time, scheduler } = setup();
    let release = () => {};
    const hanging = new Promise<void>((resolve) => {
      release = resolve;
    });
    const done: string[] = [];
    scheduler.add({
      name: "per-workspace",
      schedule: { everyMs: 1000 },
      workspaces: () => ["ws_0000000000000001", "ws_0000000000000002", "ws_0000000000000003"],
      concurrency: 2,
      run: async (workspaceId) => {
        if (workspaceId === "ws_0000000000000001") await hanging;
        done.push(workspaceId);
      },
    });
    await time.advance(1000);
    await settle();
    expect(done).toEqual(["ws_0000000000000002", "ws_0000000000000003"]);
    release();
    await scheduler.stop();
    expect(done).toHaveLength(3);
  });

  it("stop() waits for a running job, and nothing runs after it", async () => {
    const { time, scheduler } = setup();
    let runs = 0;
    let finish = () => {};
    scheduler.add({
      name: "draining",
      schedule: { everyMs: 1000 },
      run: () => {
        runs++;
        return new Promise<void>((resolve) => {
          finish = resolve;
        });
      },
    });
    await time.advance(1000);
    let stopped = false;
    const stopping = scheduler.stop().then(() => {
      stopped = true;
    });
    await settle();
    expect(stopped).toBe(false);
    finish();
    await stopping;
    expect(time.armed()).toBe(0);
    await time.advance(5000);
    expect(runs).toBe(1);
    expect(() => scheduler.add({ name: "late", schedule: { everyMs: 1 }, run: async () => {} })).toThrow(
      /stopped/,
    );
  });

  it("refuses a bad cron expression, a bad interval and a duplicate name with a clear error", async () => {
    const { scheduler } = setup();
    const run = async () => {};
    expect(() => scheduler.add({ name: "bad", schedule: { cron: "every tuesday" }, run })).toThrow(
      /Job "bad": invalid cron expression "every tuesday"/,
    );
    expect(() => scheduler.add({ name: "zero", schedule: { everyMs: 0 }, run })).toThrow(
      /everyMs must be a positive/,
    );
    expect(() => scheduler.add({ name: "nan", schedule: { everyMs: Number.NaN }, run })).toThrow(/everyMs/);
    scheduler.add({ name: "once", schedule: { everyMs: 1000 }, run });
    expect(() => scheduler.add({ name: "once", schedule: { everyMs: 1000 }, run })).toThrow(
      /already scheduled/,
    );
    await scheduler.stop();
  });
});
