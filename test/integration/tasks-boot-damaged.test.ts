import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
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

// Boot reads each triggered task named by the schedule index (store.ts boot) and, once, every
// task when it builds that index. It read them without the check a workspace's load makes
// (damaged-records.ts): a record that did not parse stopped the whole instance, one that parsed
// but was not an object had its schedule entry dropped, and a task file copied by hand into
// another workspace's or owner's folder was taken for the task its text named, which was armed
// and caught up from the copy's stale schedule: its missed instant ran a second time.

const HOUR_MS = 60 * 60 * 1000;
const alice = testPrincipal("alice").id;
const bob = testPrincipal("bob").id;
let instance: TestAtrium | undefined;
let captured: ReturnType<typeof capturingLogger>;

afterEach(async () => {
  await instance?.stop();
  instance = undefined;
});

function running(): TestAtrium {
  if (!instance) throw new Error("no instance");
  return instance;
}

async function start(): Promise<{ time: FakeTime; ws: string }> {
  const time = new FakeTime(Date.UTC(2026, 0, 1, 0, 30));
  captured = capturingLogger();
  instance = await startTestAtrium({ clock: time.clock, timers: time.timers, log: captured.log });
  return { time, ws: await bootstrapWorkspace(instance, "alice") };
}

async function createHourly(ws: string, name: string): Promise<Task> {
  const created = await running().rest("alice", "POST", `/v1/workspaces/${ws}/tasks`, {
    name,
    action: { tool: "files__list", arguments: {} },
    trigger: { cron: "0 * * * *", timezone: "UTC" },
  });
  expect(created.status, await created.clone().text()).toBe(201);
  return (await created.json()) as Task;
}

async function runsOf(ws: string, task: Task): Promise<Run[]> {
  const response = await running().rest("alice", "GET", `/v1/workspaces/${ws}/tasks/${task.id}/runs`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { runs: Run[] }).runs;
}

const taskFile = (ws: string, ownerId: string, task: Task) =>
  join(running().root, ws, "tasks", ownerId, `${task.id}.json`);
const schedules = () => join(running().root, "_instance", "tasks", "schedules");
const entryName = (ws: string, ownerId: string, task: Task) => `${ws}-${ownerId}-${task.id}.json`;
const leftOut = () =>
  captured.lines.filter((line) => String(line.msg).startsWith("task left out of its workspace's tasks"));

describe("a task file copied by hand into another folder, its schedule entry with it", () => {
  it.each([
    ["another workspace", "bob's workspace", "its workspaceId is not the workspace it is in"],
    ["another owner's folder", "its own workspace", "its ownerId is not the owner folder it is in"],
  ])("into %s: it is not armed at boot, and is logged by its path", async (_, where, reason) => {
    const { time, ws } = await start();
    const other = where === "bob's workspace" ? await bootstrapWorkspace(running(), "bob") : ws;
    const ownerThere = where === "bob's workspace" ? alice : bob;
    const task = await createHourly(ws, "hourly");
    await running().close();
    // The copy is taken before the task's 01:00 schedule runs: its text names 00:30 as the last
    // instant it acted on.
    const stale = await readFile(taskFile(ws, alice, task), "utf8");
    instance = await running().restart();
    // To 01:00, where the hourly run starts, and no further while it runs: advancing past 01:05
    // fired the run's own timeout while its disk work was still under way on a loaded machine
    // (it ended timed_out). The half hour after is jumped, firing nothing.
    await time.advance(HOUR_MS / 2);
    await eventually(async () => {
      const runs = await runsOf(ws, task);
      expect(runs.map((run) => [run.scheduledFor, run.execution.status])).toEqual([
        ["2026-01-01T01:00:00.000Z", "succeeded"],
      ]);
    });
    time.jump(HOUR_MS / 2);
    await running().close();
    const copy = taskFile(other, ownerThere, task);
    await mkdir(join(copy, ".."), { recursive: true });
    await writeFile(copy, stale);
    await writeFile(
      join(schedules(), entryName(other, ownerThere, task)),
      JSON.stringify({ workspaceId: other, ownerId: ownerThere, taskId: task.id }),
    );

    instance = await running().restart();

    // Read as the task it names, the copy was caught up from 00:30: the 01:00 instant, run already,
    // ran again in the original's workspace, as its owner.
    expect((await runsOf(ws, task)).map((run) => run.scheduledFor)).toEqual(["2026-01-01T01:00:00.000Z"]);
    expect(leftOut()).toMatchObject([
      { workspaceId: other, ownerId: ownerThere, id: task.id, path: copy, reason },
    ]);
  });
});

describe("a triggered task whose record is damaged", () => {
  it.each([
    ["does not parse", "{", "it ends before its JSON does"],
    ["is null", "null", "it is not a JSON object"],
  ])(
    "that %s is skipped at boot and logged; the others are caught up, and a restored file is armed by the next boot",
    async (_, text, reason) => {
      const { time, ws } = await start();
      const damaged = await createHourly(ws, "damaged");
      const healthy = await createHourly(ws, "healthy");
      await running().close();
      const file = taskFile(ws, alice, damaged);
      const whole = await readFile(file, "utf8");
      await writeFile(file, text);
      time.jump(3 * HOUR_MS);

      instance = await running().restart();

      expect(await runsOf(ws, healthy)).toMatchObject([
        { missedSince: "2026-01-01T01:00:00.000Z", scheduledFor: "2026-01-01T03:00:00.000Z" },
      ]);
      expect(leftOut()).toMatchObject([
        { workspaceId: ws, ownerId: alice, id: damaged.id, path: file, reason },
      ]);
      // Its entry stays: whether it has a trigger cannot be read while it is damaged.
      expect(await readdir(schedules())).toContain(entryName(ws, alice, damaged));
      await running().close();
      await writeFile(file, whole);
      instance = await running().restart();
      expect(await runsOf(ws, damaged)).toMatchObject([
        { missedSince: "2026-01-01T01:00:00.000Z", scheduledFor: "2026-01-01T03:00:00.000Z" },
      ]);
    },
  );
});

describe("a triggered task whose record cannot be read", () => {
  // A read that failed other than by not parsing (EIO, EACCES; here EISDIR, a folder under its
  // name) was thrown out of boot: the instance did not start.
  it("is skipped at boot and logged; the others are caught up, and the mended file is armed by the next boot", async () => {
    const { time, ws } = await start();
    const unreadable = await createHourly(ws, "unreadable");
    const healthy = await createHourly(ws, "healthy");
    await running().close();
    const file = taskFile(ws, alice, unreadable);
    await rename(file, `${file}.aside`);
    await mkdir(file);
    time.jump(3 * HOUR_MS);

    instance = await running().restart();

    expect(await runsOf(ws, healthy)).toMatchObject([
      { missedSince: "2026-01-01T01:00:00.000Z", scheduledFor: "2026-01-01T03:00:00.000Z" },
    ]);
    expect(
      captured.lines.filter((line) => String(line.msg).startsWith("task left out for now")),
    ).toMatchObject([{ workspaceId: ws, ownerId: alice, id: unreadable.id, path: file }]);
    expect(await readdir(schedules())).toContain(entryName(ws, alice, unreadable));
    await running().close();
    await rm(file, { recursive: true });
    await rename(`${file}.aside`, file);
    instance = await running().restart();
    expect(await runsOf(ws, unreadable)).toMatchObject([
      { missedSince: "2026-01-01T01:00:00.000Z", scheduledFor: "2026-01-01T03:00:00.000Z" },
    ]);
  });
});

describe("the schedule index built again", () => {
  it("indexes a task whose record does not parse at its path, and boot goes on without it", async () => {
    const { time, ws } = await start();
    const damaged = await createHourly(ws, "damaged");
    const healthy = await createHourly(ws, "healthy");
    await running().close();
    const file = taskFile(ws, alice, damaged);
    await writeFile(file, '{"id": "tsk_');
    // Moved out, the index is built again from the workspaces, reading every task.
    await rm(schedules(), { recursive: true });
    time.jump(3 * HOUR_MS);

    instance = await running().restart();

    expect(await runsOf(ws, healthy)).toMatchObject([{ scheduledFor: "2026-01-01T03:00:00.000Z" }]);
    expect(leftOut()).toMatchObject([{ id: damaged.id, path: file, reason: "it ends before its JSON does" }]);
    expect(await readdir(schedules())).toContain(entryName(ws, alice, damaged));
  });
});
