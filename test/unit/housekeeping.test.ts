import { describe, expect, it } from "vitest";
import { HOUSEKEEPING_INTERVAL_MS, scheduleHousekeeping } from "../../src/housekeeping.ts";
import { everyLeaseLocal } from "../../src/kernel/leases.ts";
import { Scheduler } from "../../src/kernel/scheduler.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { memoryLog } from "../helpers/memory-log.ts";

describe("scheduleHousekeeping", () => {
  it("runs every chore each interval, and a failing chore neither stops the others nor the next round", async () => {
    const time = new FakeTime();
    const { log, lines } = memoryLog();
    const scheduler = new Scheduler({ clock: time.clock, timers: time.timers, leases: everyLeaseLocal, log });
    const ran: string[] = [];
    scheduleHousekeeping(
      scheduler,
      [
        {
          name: "fails",
          run: async () => {
            ran.push("fails");
            throw new Error("disk gone");
          },
        },
        { name: "counts", run: async () => void ran.push("counts") },
      ],
      log,
    );
    await time.advance(HOUSEKEEPING_INTERVAL_MS - 1);
    expect(ran).toEqual([]);
    await time.advance(1);
    await time.advance(HOUSEKEEPING_INTERVAL_MS);
    expect(ran).toEqual(["fails", "counts", "fails", "counts"]);
    expect(lines.filter((l) => l.chore === "fails")).toHaveLength(2);
    await scheduler.stop();
  });

  it("runs no further chore of a round once the root's lock is no longer this process's, saying which", async () => {
    const time = new FakeTime();
    const { log, lines } = memoryLog();
    const scheduler = new Scheduler({ clock: time.clock, timers: time.timers, leases: everyLeaseLocal, log });
    const ran: string[] = [];
    let ours = true;
    scheduleHousekeeping(
      scheduler,
      [
        {
          name: "grants",
          run: async () => {
            ran.push("grants");
            // Taken over while this chore ran, as if the process was frozen here.
            ours = false;
          },
        },
        { name: "clients", run: async () => void ran.push("clients") },
        { name: "sessions", run: async () => void ran.push("sessions") },
      ],
      log,
      HOUSEKEEPING_INTERVAL_MS,
      async () => ours,
    );
    await time.advance(HOUSEKEEPING_INTERVAL_MS);
    expect(ran).toEqual(["grants"]);
    expect(lines).toContainEqual(
      expect.objectContaining({
        msg: "housekeeping stopped: the instance lock is no longer this process's",
        notRun: ["clients", "sessions"],
      }),
    );
    await scheduler.stop();
  });
});
