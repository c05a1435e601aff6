import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Run, Task } from "../../src/platform/tasks/model.ts";
import {
  bootstrapWorkspace,
  capturingLogger,
  startTestAtrium,
  type TestAtrium,
  testPrincipal,
} from "../helpers/atrium.ts";
import { eventually } from "../helpers/eventually.ts";
import { FakeTime } from "../helpers/fake-time.ts";

// Boot runs each task's missed schedule once (TaskSchedules.armAll, awaited by the tasks app's
// ready(), awaited by startAtrium). One task's catch-up that threw stopped the whole instance from
// starting: here a triggered task whose stored input schema refuses the empty input a schedule
// runs with (a task file an operator edited or copied in, or one stored under older rules). Working
// out what was missed was not guarded with the fire: a stored time that is not a date made croner
// throw out of the boot (a cron trigger), or the fire throw at every boot (an interval).

const HOUR_MS = 60 * 60 * 1000;
let instance: TestAtrium | undefined;

afterEach(async () => {
  await instance?.stop();
  instance = undefined;
});

async function createHourly(ws: string, name: string, extra: Record<string, unknown> = {}): Promise<Task> {
  const created = await (instance as TestAtrium).rest("alice", "POST", `/v1/workspaces/${ws}/tasks`, {
    name,
    action: { tool: "files__list", arguments: {} },
    trigger: { cron: "0 * * * *", timezone: "UTC" },
    ...extra,
  });
  expect(created.status, await created.clone().text()).toBe(201);
  return (await created.json()) as Task;
}

/** Rewrites the stored task's record, the instance stopped, with `fields` over it. */
async function editStored(ws: string, task: Task, fields: Record<string, unknown>): Promise<void> {
  const running = instance as TestAtrium;
  const file = join(running.root, ws, "tasks", testPrincipal("alice").id, `${task.id}.json`);
  const stored = JSON.parse(await readFile(file, "utf8")) as Task;
  await writeFile(file, JSON.stringify({ ...stored, ...fields }));
}

async function runsOf(ws: string, task: Task): Promise<Run[]> {
  const response = await (instance as TestAtrium).rest(
    "alice",
    "GET",
    `/v1/workspaces/${ws}/tasks/${task.id}/runs`,
  );
  return ((await response.json()) as { runs: Run[] }).runs;
}

describe("a missed schedule that fails at boot", () => {
  it("is logged with its workspace and task, and the instance starts and catches up the others", async () => {
    const time = new FakeTime(Date.UTC(2026, 0, 1, 0, 30));
    const captured = capturingLogger();
    instance = await startTestAtrium({ clock: time.clock, timers: time.timers, log: captured.log });
    const ws = await bootstrapWorkspace(instance, "alice");
    const refusing = await createHourly(ws, "refusing", {
      inputSchema: { type: "object", properties: { x: { type: "string" } } },
    });
    const healthy = await createHourly(ws, "healthy");
    await instance.close();
    await editStored(ws, refusing, { inputSchema: { ...refusing.inputSchema, required: ["x"] } });
    time.jump(3 * HOUR_MS);

    instance = await instance.restart();

    const failed = captured.lines.find((line) => line.taskId === refusing.id && line.level === 40);
    expect(failed).toMatchObject({
      workspaceId: ws,
      msg: "a missed schedule's catch-up at boot failed; the task keeps its schedule",
    });
    expect(await runsOf(ws, healthy)).toMatchObject([
      {
        trigger: "schedule",
        missedSince: "2026-01-01T01:00:00.000Z",
        scheduledFor: "2026-01-01T03:00:00.000Z",
      },
    ]);
  });
});

describe("a stored time that is not a date", () => {
  it("catches nothing up for its task, said once, and the task keeps its schedule", async () => {
    const time = new FakeTime(Date.UTC(2026, 0, 1, 0, 30));
    const captured = capturingLogger();
    instance = await startTestAtrium({ clock: time.clock, timers: time.timers, log: captured.log });
    const ws = await bootstrapWorkspace(instance, "alice");
    const cron = await createHourly(ws, "cron");
    const interval = await createHourly(ws, "interval", { trigger: { everySeconds: 3600 } });
    const healthy = await createHourly(ws, "healthy");
    await instance.close();
    await editStored(ws, cron, { lastScheduledAt: "yesterday" });
    await editStored(ws, interval, { lastScheduledAt: "soon" });
    time.jump(3 * HOUR_MS);

    instance = await instance.restart();

    const undated = captured.lines.filter((line) => String(line.msg).includes("is not a date"));
    // In the schedule index's order, which is no order of theirs.
    expect(undated.map((line) => `${line.workspaceId} ${line.taskId}`).sort()).toEqual(
      [`${ws} ${cron.id}`, `${ws} ${interval.id}`].sort(),
    );
    expect(await runsOf(ws, healthy)).toMatchObject([{ missedSince: "2026-01-01T01:00:00.000Z" }]);
    expect([...(await runsOf(ws, cron)), ...(await runsOf(ws, interval))]).toEqual([]);
    // Their next schedules run, and record a time that is a date.
    await time.advance(HOUR_MS);
    for (const task of [cron, interval]) {
      await eventually(async () => expect(await runsOf(ws, task)).toMatchObject([{ trigger: "schedule" }]));
    }
  });
});
