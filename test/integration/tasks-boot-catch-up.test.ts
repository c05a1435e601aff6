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
import { FakeTime } from "../helpers/fake-time.ts";

// Boot runs each task's missed schedule once (TaskSchedules.armAll, awaited by the tasks app's
// ready(), awaited by startAtrium). One task's catch-up that threw stopped the whole instance from
// starting: here a triggered task whose stored input schema refuses the empty input a schedule
// runs with (a task file an operator edited or copied in, or one stored under older rules).

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
    const file = join(instance.root, ws, "tasks", testPrincipal("alice").id, `${refusing.id}.json`);
    const stored = JSON.parse(await readFile(file, "utf8")) as Task;
    await writeFile(
      file,
      JSON.stringify({ ...stored, inputSchema: { ...stored.inputSchema, required: ["x"] } }),
    );
    time.jump(3 * HOUR_MS);

    instance = await instance.restart();

    const failed = captured.lines.find((line) => line.taskId === refusing.id && line.level === 40);
    expect(failed).toMatchObject({
      workspaceId: ws,
      msg: "a missed schedule's catch-up at boot failed; the task keeps its schedule",
    });
    const runs = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/tasks/${healthy.id}/runs`);
    expect(((await runs.json()) as { runs: Run[] }).runs).toMatchObject([
      {
        trigger: "schedule",
        missedSince: "2026-01-01T01:00:00.000Z",
        scheduledFor: "2026-01-01T03:00:00.000Z",
      },
    ]);
  });
});
