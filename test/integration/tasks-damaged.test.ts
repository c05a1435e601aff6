import { mkdir, readFile, rename, rmdir, stat, writeFile } from "node:fs/promises";
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
import { addMember } from "../helpers/members.ts";

// One record of a workspace's tasks that does not parse (a disk fault, an operator's edit) made
// every tasks request of the whole workspace a 500: other tasks' runs, other members' tasks, even
// deleting the task it belongs to. The load (TaskFiles.allTasks, runHeaders) failed whole, was
// tried again at every call, and failed again. So did one that parses but is not a record of its
// place (`null`, an array, another task's copy). Now the record is left out and logged once, by
// path (the runs of a task whose record is damaged are kept: test/unit/platform/tasks/store.test.ts),
// and a task left out still counts against the workspace's bounds.

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
async function twoTasksStopped(sections: Record<string, unknown> = {}) {
  captured = capturingLogger();
  instance = await startTestAtrium({ log: captured.log, sections });
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
  await eventually(async () => {
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
    // Its owner is told it is there and what to do; another member, who may not see it if it was
    // private (which cannot be read), is told there is no such task.
    const asOwner = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/tasks/${damaged.id}`);
    expect(asOwner.status).toBe(409);
    expect(((await asOwner.json()) as { error: { code: string } }).error.code).toBe("task_record_unreadable");
    await addMember(instance.rest, "alice", ws, "bob", { principalId: testPrincipal("bob").id });
    expect((await instance.rest("bob", "GET", `/v1/workspaces/${ws}/tasks/${damaged.id}`)).status).toBe(404);
    expect(leftOut("task")).toMatchObject([{ workspaceId: ws, ownerId: alice, id: damaged.id, path: file }]);
    expect(JSON.stringify(captured.lines)).not.toContain(SECRET);
  });
});

/** What a task file is made to hold, from its own record and the other task's, and why it is left out. */
const notRecords: Array<[string, (own: Task, other: Task) => string, string]> = [
  ["null", () => "null", "it is not a JSON object"],
  ["an array", () => "[]", "it is not a JSON object"],
  ["a copy of the other task", (_own, other) => JSON.stringify(other), "its id is not its file's name"],
  [
    "itself, owned by someone else",
    (own) => JSON.stringify({ ...own, ownerId: testPrincipal("bob").id }),
    "its ownerId is not the owner folder it is in",
  ],
  [
    "itself, of another workspace",
    (own) => JSON.stringify({ ...own, workspaceId: "ws_0123456789abcdef" }),
    "its workspaceId is not the workspace it is in",
  ],
];

describe("a task or run record that parses but is not a record of its place", () => {
  it.each(notRecords)(
    "a task file holding %s is left out and logged; the workspace's other tasks work",
    async (_, text, reason) => {
      const { ws, damaged, healthy, owned } = await twoTasksStopped();
      const file = join(owned, `${damaged.id}.json`);
      await writeFile(file, text(damaged, healthy));
      instance = await running().restart();

      const list = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/tasks`);
      expect(list.status, await list.clone().text()).toBe(200);
      expect(((await list.json()) as { tasks: Task[] }).tasks.map((task) => task.id)).toEqual([healthy.id]);
      const got = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/tasks/${damaged.id}`);
      expect(got.status).toBe(409);
      expect(leftOut("task")).toMatchObject([
        { workspaceId: ws, ownerId: alice, id: damaged.id, path: file, reason },
      ]);
    },
  );

  it("a run file holding `null` is left out; its task's and the other task's runs are listed", async () => {
    const { ws, damaged, healthy, run, owned } = await twoTasksStopped();
    const file = join(owned, "runs", `${run.id}.json`);
    await writeFile(file, "null\n");
    instance = await running().restart();

    const healthyRuns = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/tasks/${healthy.id}/runs`);
    const damagedRuns = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/tasks/${damaged.id}/runs`);
    expect({ healthy: healthyRuns.status, damaged: damagedRuns.status }).toEqual({
      healthy: 200,
      damaged: 200,
    });
    expect(((await damagedRuns.json()) as { runs: Run[] }).runs).toEqual([]);
    expect((await instance.rest("alice", "DELETE", `/v1/workspaces/${ws}/tasks/${damaged.id}`)).status).toBe(
      204,
    );
    expect(leftOut("task run")).toMatchObject([
      { workspaceId: ws, ownerId: alice, id: run.id, path: file, reason: "it is not a JSON object" },
    ]);
  });
});

describe("a task whose record is damaged", () => {
  it.each([
    [
      "tasks.maxTasksPerWorkspace",
      { maxTasksPerWorkspace: 2, maxTasksPerOwner: 2 },
      /already has 2 tasks \(1 of them/,
    ],
    [
      "tasks.maxTasksPerOwner",
      { maxTasksPerWorkspace: 10, maxTasksPerOwner: 2 },
      /already own 2 tasks .*\(1 of them/,
    ],
  ])("is counted against the bounds: a create past %s is refused", async (_, tasks, says) => {
    // Left out, it was not counted: the create passed, and restoring its file took the workspace
    // past its bound.
    const { ws, damaged, owned } = await twoTasksStopped({ tasks });
    await writeFile(join(owned, `${damaged.id}.json`), "{");
    instance = await running().restart();

    const refused = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/tasks`, {
      name: "third",
      action: { tool: "files__list", arguments: {} },
    });
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { error: { code: string; message: string } }).error).toMatchObject({
      code: "too_many_tasks",
      message: expect.stringMatching(says),
    });
  });
});

describe("a run record that cannot be read", () => {
  // A start reads the workspace's runs first, for its task's next sequence (ADR 0056): one record
  // that failed to read other than by not parsing (EIO, EACCES; here EISDIR, a folder under its
  // name) failed that read, and with it every start of every task in the workspace, manual and
  // scheduled. Now it is left out while it cannot be read, and read again at each later call: a
  // transient fault does not lose the run until the next eviction.
  it("lets the other task start and rejoins its task's runs once it reads again", async () => {
    const { ws, damaged, healthy, run, owned } = await twoTasksStopped();
    const file = join(owned, "runs", `${run.id}.json`);
    const aside = join(owned, `${run.id}.aside`);
    await rename(file, aside);
    await mkdir(file);
    instance = await running().restart();

    const healthyStart = await instance.rest(
      "alice",
      "POST",
      `/v1/workspaces/${ws}/tasks/${healthy.id}/runs`,
      {},
    );
    expect(healthyStart.status, await healthyStart.clone().text()).toBe(201);
    const listed = async () => {
      const response = await running().rest("alice", "GET", `/v1/workspaces/${ws}/tasks/${damaged.id}/runs`);
      expect(response.status).toBe(200);
      return ((await response.json()) as { runs: Run[] }).runs.map((listedRun) => listedRun.id);
    };
    expect(await listed()).toEqual([]);
    expect(
      captured.lines.filter((line) => String(line.msg).startsWith("task run left out for now")),
    ).toMatchObject([{ workspaceId: ws, ownerId: alice, id: run.id, path: file }]);
    // Its own task starts too, numbered after the unread run: the task's record keeps the highest
    // sequence given (ADR 0171), where a start used to take the unread run's own.
    const meanwhile = await instance.rest(
      "alice",
      "POST",
      `/v1/workspaces/${ws}/tasks/${damaged.id}/runs`,
      {},
    );
    expect(meanwhile.status).toBe(201);
    const later = (await meanwhile.json()) as Run;
    expect([run.sequence, later.sequence]).toEqual([1, 2]);
    expect(await listed()).toEqual([later.id]);
    // Both runs ended first: a run's end reads the runs again, and one between the two steps
    // below would find the record gone, not unreadable, and drop it for good.
    const healthyRun = (await healthyStart.json()) as Run;
    await eventually(async () => {
      for (const [task, id] of [
        [healthy.id, healthyRun.id],
        [damaged.id, later.id],
      ] as const) {
        const read = await running().rest("alice", "GET", `/v1/workspaces/${ws}/tasks/${task}/runs/${id}`);
        expect(((await read.json()) as Run).execution.status).not.toBe("running");
      }
    });

    await rmdir(file);
    await rename(aside, file);
    // Read again at the next call, without an eviction, and put in its place: the older.
    expect(await listed()).toEqual([later.id, run.id]);
  });
});

describe("a task record that cannot be read", () => {
  // A task record that failed to read other than by not parsing (EIO, EACCES; here EISDIR, a
  // folder under its name) failed the load of its workspace's tasks: every list, start and change
  // of every task in the workspace answered 500 until the file was fixed. Now only that task is
  // left out, its runs kept, and it is back at the next load once it reads.
  it("leaves only that task out, tells its owner so, and is back with its runs once mended and loaded again", async () => {
    const { ws, damaged, healthy, run, owned } = await twoTasksStopped();
    const file = join(owned, `${damaged.id}.json`);
    const aside = join(owned, `${damaged.id}.aside`);
    await rename(file, aside);
    await mkdir(file);
    instance = await running().restart();

    const list = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/tasks`);
    expect(list.status, await list.clone().text()).toBe(200);
    expect(((await list.json()) as { tasks: Task[] }).tasks.map((task) => task.id)).toEqual([healthy.id]);
    const healthyStart = await instance.rest(
      "alice",
      "POST",
      `/v1/workspaces/${ws}/tasks/${healthy.id}/runs`,
      {},
    );
    expect(healthyStart.status, await healthyStart.clone().text()).toBe(201);
    const renamed = await instance.rest("alice", "PATCH", `/v1/workspaces/${ws}/tasks/${healthy.id}`, {
      name: "still healthy",
    });
    expect(renamed.status).toBe(200);
    const asOwner = await instance.rest("alice", "PATCH", `/v1/workspaces/${ws}/tasks/${damaged.id}`, {
      name: "partial",
    });
    expect(asOwner.status).toBe(409);
    expect(((await asOwner.json()) as { error: { code: string; message: string } }).error).toMatchObject({
      code: "task_record_unreadable",
      message: expect.stringContaining("nothing was changed"),
    });
    expect(
      (await instance.rest("alice", "POST", `/v1/workspaces/${ws}/tasks/${damaged.id}/runs`, {})).status,
    ).toBe(409);
    expect(
      captured.lines.filter((line) => String(line.msg).startsWith("task left out for now")),
    ).toMatchObject([{ workspaceId: ws, ownerId: alice, id: damaged.id, path: file }]);
    // Read as a deleted task's run by the runs' read, its run stays while its record is there.
    await eventually(async () => {
      const healthyRun = (await healthyStart.clone().json()) as Run;
      const read = await running().rest(
        "alice",
        "GET",
        `/v1/workspaces/${ws}/tasks/${healthy.id}/runs/${healthyRun.id}`,
      );
      expect(((await read.json()) as Run).execution.status).not.toBe("running");
    });
    await running().close();

    await rmdir(file);
    await rename(aside, file);
    instance = await running().restart();

    const back = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/tasks/${damaged.id}`);
    expect(back.status).toBe(200);
    expect(((await back.json()) as Task).name).toBe("damaged");
    const runs = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/tasks/${damaged.id}/runs`);
    expect(((await runs.json()) as { runs: Run[] }).runs.map((kept) => kept.id)).toEqual([run.id]);
    const started = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/tasks/${damaged.id}/runs`, {});
    expect(started.status).toBe(201);
    expect(((await started.json()) as Run).sequence).toBe(2);
  });
});

describe("a change of a task whose record was damaged after it was loaded", () => {
  it.each([
    ["does not parse", async (file: string) => writeFile(file, `{"name": "${SECRET}"`)],
    ["cannot be read", async (file: string) => rename(file, `${file}.aside`).then(() => mkdir(file))],
  ])(
    "whose record %s writes nothing over it and says what to do; the other task changes",
    async (_, damage) => {
      const { ws, damaged, healthy, owned } = await twoTasksStopped();
      instance = await running().restart();
      // Loaded while the record was whole.
      expect((await instance.rest("alice", "GET", `/v1/workspaces/${ws}/tasks`)).status).toBe(200);
      const file = join(owned, `${damaged.id}.json`);
      await damage(file);

      const refused = await instance.rest("alice", "PATCH", `/v1/workspaces/${ws}/tasks/${damaged.id}`, {
        name: "partial",
      });
      expect(refused.status).toBe(409);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe(
        "task_record_unreadable",
      );
      // Nothing written over it: the damaged text, or the folder, is there as it was.
      if ((await stat(file)).isFile()) expect(await readFile(file, "utf8")).toContain(SECRET);
      else expect((await stat(file)).isDirectory()).toBe(true);
      const other = await instance.rest("alice", "PATCH", `/v1/workspaces/${ws}/tasks/${healthy.id}`, {
        name: "renamed",
      });
      expect(other.status).toBe(200);
      expect(JSON.stringify(captured.lines)).not.toContain(SECRET);
    },
  );
});
