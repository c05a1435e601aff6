import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Run, Task } from "../../src/platform/tasks/model.ts";
import {
  bootstrapWorkspace,
  capturingLogger,
  startTestAtrium,
  type TestAtrium,
  testPrincipal,
} from "../helpers/atrium.ts";

// One record of a workspace's tasks that does not parse (a disk fault, an operator's edit) made
// every tasks request of the whole workspace a 500: other tasks' runs, other members' tasks, even
// deleting the task it belongs to. The load (TaskFiles.allTasks, runHeaders) failed whole, was
// tried again at every call, and failed again. Now the record is left out and logged once, by path
// (the runs of a task whose record does not parse are kept: test/unit/platform/tasks/store.test.ts).

const alice = testPrincipal("alice").id;
const SECRET = "sk-live-not-to-be-logged";
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

/** Two tasks of alice's, `damaged` with one finished run, and the instance stopped. */
async function twoTasksStopped() {
  captured = capturingLogger();
  instance = await startTestAtrium({ log: captured.log });
  const ws = await bootstrapWorkspace(instance, "alice");
  const make = async (name: string) => {
    const response = await running().rest("alice", "POST", `/v1/workspaces/${ws}/tasks`, {
      name,
      action: { tool: "files__list", arguments: {} },
    });
    expect(response.status).toBe(201);
    return (await response.json()) as Task;
  };
  const damaged = await make("damaged");
  const healthy = await make("healthy");
  const start = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/tasks/${damaged.id}/runs`, {});
  expect(start.status).toBe(201);
  const run = (await start.json()) as Run;
  await vi.waitFor(async () => {
    const now = await running().rest(
      "alice",
      "GET",
      `/v1/workspaces/${ws}/tasks/${damaged.id}/runs/${run.id}`,
    );
    expect(((await now.json()) as Run).execution.status).not.toBe("running");
  });
  await instance.close();
  return { ws, damaged, healthy, run, owned: join(instance.root, ws, "tasks", alice) };
}

const leftOut = (kind: string) =>
  captured.lines.filter((line) => String(line.msg).startsWith(`${kind} left out of its workspace's tasks`));

describe("a run record that does not parse", () => {
  it("leaves the other tasks' runs working, lets its task be deleted, and is logged once by path", async () => {
    const { ws, damaged, healthy, run, owned } = await twoTasksStopped();
    const file = join(owned, "runs", `${run.id}.json`);
    await writeFile(file, `{"id": "run_", "note": "${SECRET}`);
    instance = await running().restart();

    const healthyRuns = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/tasks/${healthy.id}/runs`);
    const healthyStart = await instance.rest(
      "alice",
      "POST",
      `/v1/workspaces/${ws}/tasks/${healthy.id}/runs`,
      {},
    );
    const damagedRuns = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/tasks/${damaged.id}/runs`);
    const damagedRun = await instance.rest(
      "alice",
      "GET",
      `/v1/workspaces/${ws}/tasks/${damaged.id}/runs/${run.id}`,
    );
    const deleted = await instance.rest("alice", "DELETE", `/v1/workspaces/${ws}/tasks/${damaged.id}`);
    expect({
      listHealthyRuns: healthyRuns.status,
      startHealthy: healthyStart.status,
      listDamagedRuns: damagedRuns.status,
      readDamagedRun: damagedRun.status,
      deleteItsTask: deleted.status,
    }).toEqual({
      listHealthyRuns: 200,
      startHealthy: 201,
      listDamagedRuns: 200,
      readDamagedRun: 404,
      deleteItsTask: 204,
    });
    expect(((await damagedRuns.json()) as { runs: Run[] }).runs).toEqual([]);
    expect(leftOut("task run")).toMatchObject([
      { workspaceId: ws, ownerId: alice, id: run.id, path: file, reason: "it ends before its JSON does" },
    ]);
    expect(JSON.stringify(captured.lines)).not.toContain(SECRET);
  });
});

describe("a task record that does not parse", () => {
  it("is left out of the list and logged once by path; the workspace's other tasks work", async () => {
    const { ws, damaged, healthy, owned } = await twoTasksStopped();
    const file = join(owned, `${damaged.id}.json`);
    await writeFile(file, `{"name": "${SECRET}"`);
    instance = await running().restart();

    const list = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/tasks`);
    expect(list.status, await list.clone().text()).toBe(200);
    expect(((await list.json()) as { tasks: Task[] }).tasks.map((task) => task.id)).toEqual([healthy.id]);
    const started = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/tasks/${healthy.id}/runs`, {});
    expect(started.status).toBe(201);
    expect((await instance.rest("alice", "GET", `/v1/workspaces/${ws}/tasks/${damaged.id}`)).status).toBe(
      404,
    );
    expect(leftOut("task")).toMatchObject([{ workspaceId: ws, ownerId: alice, id: damaged.id, path: file }]);
    expect(JSON.stringify(captured.lines)).not.toContain(SECRET);
  });
});
