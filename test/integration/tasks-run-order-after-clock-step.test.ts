import { afterEach, expect, it } from "vitest";
import type { Run, Task } from "../../src/platform/tasks/model.ts";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { eventually } from "../helpers/eventually.ts";
import { FakeTime } from "../helpers/fake-time.ts";

// runsKeptPerTask keeps a task's newest finished runs. While a workspace's runs are loaded, newest
// is the order they were made; a load (a restart, or the tasks' idle eviction) ordered them by
// their stored startedAt. After the wall clock stepped back between two runs, the later run has the
// earlier startedAt: read back, it was taken for the oldest, listed last, and the next run's prune
// deleted it (and its result file) while the older run was kept. Runs are ordered by the sequence
// each is given at its start (loaded.ts placeRuns).

const HOUR_MS = 60 * 60 * 1000;

let instance: TestAtrium | undefined;
afterEach(async () => {
  await instance?.stop();
  instance = undefined;
});

it("the run made last stays the newest after a restart, listed first and kept past runsKeptPerTask, though the clock stepped back between runs", async () => {
  const time = new FakeTime(Date.UTC(2026, 11, 7, 12));
  instance = await startTestAtrium({
    clock: time.clock,
    timers: time.timers,
    sections: { tasks: { runsKeptPerTask: 2 } },
  });
  const ws = await bootstrapWorkspace(instance, "alice");
  const path = `/v1/workspaces/${ws}/tasks`;
  const created = await instance.rest("alice", "POST", path, {
    name: "list",
    action: { tool: "files__list", arguments: {} },
  });
  expect(created.status, await created.clone().text()).toBe(201);
  const task = (await created.json()) as Task;
  const runs = `${path}/${task.id}/runs`;
  // The instance of the moment: restarted below.
  const rest = (method: string, url: string, body?: Record<string, unknown>) =>
    (instance as TestAtrium).rest("alice", method, url, body);
  const runOnce = async (): Promise<Run> => {
    const started = await rest("POST", runs, {});
    expect(started.status).toBe(201);
    const run = (await started.json()) as Run;
    await eventually(async () => {
      const seen = (await (await rest("GET", `${runs}/${run.id}`)).json()) as Run;
      expect(seen.execution.status).toBe("succeeded");
    });
    return run;
  };
  const listed = async () =>
    ((await (await rest("GET", `${runs}?limit=100`)).json()) as { runs: Run[] }).runs.map((run) => run.id);

  const first = await runOnce(); // 12:00
  time.jump(-HOUR_MS + 60_000); // an NTP step back an hour, then a minute: 11:01
  const second = await runOnce();
  expect(await listed()).toEqual([second.id, first.id]);

  instance = await instance.restart();
  expect(await listed()).toEqual([second.id, first.id]);
  time.jump(60_000);
  const third = await runOnce();
  // The third run's prune takes the oldest, the first, and keeps the one made after it.
  await eventually(async () => expect(await listed()).toEqual([third.id, second.id]));
});
