import { afterEach, expect, it } from "vitest";
import type { Run, Task } from "../../src/platform/tasks/model.ts";
import { bootstrapWorkspace, capturingLogger, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { eventually } from "../helpers/eventually.ts";
import { FakeTime } from "../helpers/fake-time.ts";

// A cron instant at or before the task's lastScheduledAt is passed over (a wall clock stepped back
// past an instant that ran must not run it again), but only while that stamp is at most a day
// ahead of the clock: a clock that ran ahead (a wrong clock at boot, a VM resumed with a bad one)
// and was set right left the stamp months ahead, and every instant was passed over until the
// clock caught up (ADR 0168).

const DAY_MS = 24 * 60 * 60 * 1000;
const HOUR_MS = 60 * 60 * 1000;

let instance: TestAtrium | undefined;
afterEach(async () => {
  await instance?.stop();
  instance = undefined;
});

it("an hourly cron task still runs after a clock that ran 180 days ahead is stepped back", async () => {
  // The clock is wrong: 180 days ahead of the real 2026-12-07 08:50.
  const real = Date.UTC(2026, 11, 7, 8, 50);
  const time = new FakeTime(real + 180 * DAY_MS);
  const { log, lines } = capturingLogger();
  instance = await startTestAtrium({ clock: time.clock, timers: time.timers, log });
  const ws = await bootstrapWorkspace(instance, "alice");
  const path = `/v1/workspaces/${ws}/tasks`;
  const created = await instance.rest("alice", "POST", path, {
    name: "hourly",
    action: { tool: "files__list", arguments: {} },
    trigger: { cron: "0 * * * *", timezone: "UTC" },
  });
  expect(created.status, await created.clone().text()).toBe(201);
  const task = (await created.json()) as Task;
  const runs = async () => {
    const response = await (instance as TestAtrium).rest("alice", "GET", `${path}/${task.id}/runs?limit=100`);
    return ((await response.json()) as { runs: Run[] }).runs;
  };

  // NTP steps the clock back to the real time; the operator restarts (or a deploy does).
  time.jump(-180 * DAY_MS);
  instance = await instance.restart();
  const skipped = () =>
    lines.filter((line) => String(line.msg).startsWith("task schedule instant already accounted for")).length;
  // One instant at a time, each run seen ended before the next is due: advancing past all three at
  // once fired the next while the last fire's disk work was still under way, and croner skipped
  // it as "still running" (more often since a start writes its task's record, ADR 0171).
  await time.advance(10 * 60 * 1000); // 09:00
  for (const count of [1, 2, 3]) {
    await eventually(
      async () => {
        const now = await runs();
        expect(now.length, `runs; fires skipped as accounted for: ${skipped()}`).toBe(count);
        expect(now.map((run) => run.execution.status)).not.toContain("running");
      },
      { timeout: 5_000 },
    );
    if (count < 3) await time.advance(HOUR_MS); // 10:00, 11:00
  }
}, 60_000);
