import { afterEach, expect, it } from "vitest";
import type { Run, Task } from "../../src/platform/tasks/model.ts";
import { bootstrapWorkspace, capturingLogger, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { eventually } from "../helpers/eventually.ts";
import { FakeTime } from "../helpers/fake-time.ts";

// Each fire records its instant on the task (lastScheduledAt), so that instant never runs again.
// A job armed at boot was due at croner's next instant after the clock, never after
// lastScheduledAt: once the wall clock stepped back past the instant just run, a restart armed
// that same instant again and it ran twice, both runs with the same scheduledFor. Every fire now
// passes over a cron instant at or before lastScheduledAt (schedule.ts accountedFor).

const HOUR_MS = 60 * 60 * 1000;
const SKIPPED =
  "task schedule instant already accounted for (the wall clock went back past it): not run again";

let instance: TestAtrium | undefined;
afterEach(async () => {
  await instance?.stop();
  instance = undefined;
});

it("a cron instant already run is not run again after the clock steps back and Atrium restarts", async () => {
  const time = new FakeTime(Date.UTC(2026, 11, 7, 8, 50));
  const { log, lines } = capturingLogger();
  instance = await startTestAtrium({ clock: time.clock, timers: time.timers, log });
  const ws = await bootstrapWorkspace(instance, "alice");
  const path = `/v1/workspaces/${ws}/tasks`;
  const created = await instance.rest("alice", "POST", path, {
    name: "daily",
    action: { tool: "files__list", arguments: {} },
    trigger: { cron: "0 9 * * *", timezone: "UTC" },
  });
  expect(created.status, await created.clone().text()).toBe(201);
  const task = (await created.json()) as Task;
  const runs = async () => {
    const response = await (instance as TestAtrium).rest("alice", "GET", `${path}/${task.id}/runs?limit=100`);
    return ((await response.json()) as { runs: Run[] }).runs;
  };

  await time.advance(15 * 60 * 1000); // 09:05: the 09:00 run happened
  await eventually(async () => expect((await runs()).map((r) => r.execution.status)).toEqual(["succeeded"]));

  time.jump(-HOUR_MS); // NTP steps the clock back an hour: 08:05
  instance = await instance.restart();
  await time.advance(HOUR_MS); // 09:05 again: the job armed at boot falls due at 09:00
  // The fire passes over the instant, or (as before) runs it a second time.
  await eventually(async () =>
    expect(lines.some((line) => line.msg === SKIPPED) || (await runs()).length > 1).toBe(true),
  );
  expect((await runs()).map((r) => r.scheduledFor)).toEqual(["2026-12-07T09:00:00.000Z"]);
  expect(lines.find((line) => line.msg === SKIPPED)).toMatchObject({
    taskId: task.id,
    scheduledFor: "2026-12-07T09:00:00.000Z",
  });
});
