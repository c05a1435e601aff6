import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { TASK_DEFAULTS } from "../../../../src/platform/tasks/config.ts";
import type { Run, Task } from "../../../../src/platform/tasks/model.ts";
import type { TaskRunner } from "../../../../src/platform/tasks/runner.ts";
import type { TaskSchedules } from "../../../../src/platform/tasks/schedule.ts";
import { TaskStore } from "../../../../src/platform/tasks/store.ts";
import { Tasks } from "../../../../src/platform/tasks/tasks.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { FakeTime, settle } from "../../../helpers/fake-time.ts";
import { memoryLog } from "../../../helpers/memory-log.ts";
import { runRecord, taskRecord } from "../../../helpers/task-records.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// Who may change, delete or start a run of a task is decided again on the task as it is under the
// task's lock, where the change is written, the task removed or the run recorded: the check before
// it is only there so a refused request waits for nothing.

const owner = `usr_${"b".repeat(24)}`;
const admin = `usr_${"a".repeat(24)}`;
const member = `usr_${"c".repeat(24)}`;

let t: TempRoot;
let time: FakeTime;
let store: TaskStore;
/** Whether the task's owner is deactivated now; a test flips it. */
let ownerDeactivated: boolean;
/** Whether `admin` has been made a plain member; a test flips it. */
let adminDemoted: boolean;

beforeEach(async () => {
  t = await openTempRoot("tasks-access", admin);
  time = new FakeTime();
  ownerDeactivated = false;
  adminDemoted = false;
  store = new TaskStore(t.layout.partition("tasks"), t.layout, {
    clock: time.clock,
    log: memoryLog().log,
    idempotencyWindowMs: 3_600_000,
    results: { discard: async () => true },
  });
});

afterEach(async () => {
  await store.close();
  await t.remove();
});

function tasks(runner = { cancel: () => false } as unknown as TaskRunner): Tasks {
  return new Tasks(
    store,
    runner,
    { shown: async (run) => run },
    { arm: () => true, disarm: () => undefined } as unknown as TaskSchedules,
    { roleOf: (_ws, principalId) => (principalId === admin && !adminDemoted ? "admin" : "member") },
    { isDeactivated: (principalId) => principalId === owner && ownerDeactivated },
    TASK_DEFAULTS,
    time.clock,
  );
}

async function ownersTask(): Promise<Task> {
  const at = time.clock();
  return store.create(
    taskRecord(t.ws, owner, at, {
      name: "hourly",
      trigger: { everySeconds: 3600 },
      lastScheduledAt: new Date(at).toISOString(),
    }),
    NO_CALLER,
  );
}

/** A run of the task that ended, as its record is kept. */
async function ownersRun(task: Task): Promise<Run> {
  return store.createRun(runRecord(task, time.clock(), { startedBy: owner }), NO_CALLER);
}

/** Holds the task's lock, once it has it, until `release`: an update queued meanwhile waits for it. */
async function holdLock(task: Task): Promise<{ release: () => Promise<void> }> {
  let held = () => {};
  const holding = new Promise<void>((resolve) => (held = resolve));
  let release = () => {};
  const done = store.whileExists(task, () => {
    held();
    return new Promise<void>((resolve) => (release = resolve));
  });
  await holding;
  return {
    release: async () => {
      release();
      await done;
    },
  };
}

describe("an admin's change of a departed owner's private task", () => {
  it("is refused when the owner is back before it is written: the task is theirs alone again", async () => {
    const task = await ownersTask();
    ownerDeactivated = true;
    const lock = await holdLock(task);
    const stopping = tasks().update({ workspaceId: t.ws, principalId: admin, access: NO_CALLER }, task.id, {
      trigger: null,
    });
    const refused = expect(stopping).rejects.toMatchObject({ code: "task_not_found" });
    await settle();
    ownerDeactivated = false;
    await lock.release();
    await refused;
    expect(await store.taskIn(t.ws, task.id)).toEqual(task);
  });
});

describe("an admin's delete", () => {
  it("of a departed owner's private task is refused when the owner is back before it is removed: nothing of it goes", async () => {
    const task = await ownersTask();
    const run = await ownersRun(task);
    ownerDeactivated = true;
    const lock = await holdLock(task);
    const deleting = tasks().delete({ workspaceId: t.ws, principalId: admin, access: NO_CALLER }, task.id);
    const refused = expect(deleting).rejects.toMatchObject({ code: "task_not_found" });
    await settle();
    ownerDeactivated = false;
    await lock.release();
    await refused;
    expect(await store.taskIn(t.ws, task.id)).toEqual({ ...task, lastSequence: 1 });
    expect(await store.runIds(task)).toEqual([run.id]);
  });

  it("of a shared task is refused when its owner makes it private first: it is theirs alone", async () => {
    const task = (await store.update(
      await ownersTask(),
      (current) => ({
        ...current,
        visibility: "shared",
      }),
      NO_CALLER,
    )) as Task;
    const run = await ownersRun(task);
    const access = tasks();
    const lock = await holdLock(task);
    const hiding = access.update({ workspaceId: t.ws, principalId: owner, access: NO_CALLER }, task.id, {
      visibility: "private",
    });
    await settle();
    const deleting = access.delete({ workspaceId: t.ws, principalId: admin, access: NO_CALLER }, task.id);
    const refused = expect(deleting).rejects.toMatchObject({ code: "task_not_found" });
    await settle();
    await lock.release();
    expect(await hiding).toMatchObject({ visibility: "private" });
    await refused;
    expect(await store.taskIn(t.ws, task.id)).toMatchObject({ visibility: "private" });
    expect(await store.runIds(task)).toEqual([run.id]);
  });
});

describe("a delete by an admin made a plain member while it waited", () => {
  it("is refused: a shared task is not theirs to delete any more", async () => {
    const task = (await store.update(
      await ownersTask(),
      (current) => ({
        ...current,
        visibility: "shared",
      }),
      NO_CALLER,
    )) as Task;
    const lock = await holdLock(task);
    const deleting = tasks().delete({ workspaceId: t.ws, principalId: admin, access: NO_CALLER }, task.id);
    const refused = expect(deleting).rejects.toMatchObject({ code: "forbidden" });
    await settle();
    adminDemoted = true;
    await lock.release();
    await refused;
    expect(await store.taskIn(t.ws, task.id)).toEqual(task);
  });
});

describe("two deletes of a task at once", () => {
  it("remove it once: the later finds it gone and is answered as for any task that is not there", async () => {
    const task = await ownersTask();
    const access = tasks();
    const asker = { workspaceId: t.ws, principalId: owner, access: NO_CALLER };
    const lock = await holdLock(task);
    const first = access.delete(asker, task.id);
    const second = access.delete(asker, task.id);
    const refused = expect(second).rejects.toMatchObject({ code: "task_not_found" });
    await settle();
    await lock.release();
    await first;
    await refused;
    expect(await store.taskIn(t.ws, task.id)).toBeUndefined();
  });
});

describe("a member's run of a shared task", () => {
  it("is refused when its owner makes it private before the run is recorded: it is theirs alone", async () => {
    const task = (await store.update(
      await ownersTask(),
      (current) => ({
        ...current,
        visibility: "shared",
      }),
      NO_CALLER,
    )) as Task;
    const start = vi.fn();
    const access = tasks({ start } as unknown as TaskRunner);
    const lock = await holdLock(task);
    const hiding = access.update({ workspaceId: t.ws, principalId: owner, access: NO_CALLER }, task.id, {
      visibility: "private",
    });
    await settle();
    const starting = access.run({ workspaceId: t.ws, principalId: member, access: NO_CALLER }, task.id, {});
    const refused = expect(starting).rejects.toMatchObject({ code: "task_not_found" });
    await settle();
    await lock.release();
    expect(await hiding).toMatchObject({ visibility: "private" });
    await refused;
    expect(start).not.toHaveBeenCalled();
  });
});
