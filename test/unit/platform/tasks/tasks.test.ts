import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { TASK_DEFAULTS } from "../../../../src/platform/tasks/config.ts";
import { newTaskId, type Task } from "../../../../src/platform/tasks/model.ts";
import type { TaskRunner } from "../../../../src/platform/tasks/runner.ts";
import type { TaskSchedules } from "../../../../src/platform/tasks/schedule.ts";
import { TaskStore } from "../../../../src/platform/tasks/store.ts";
import { Tasks } from "../../../../src/platform/tasks/tasks.ts";
import { FakeTime, settle } from "../../../helpers/fake-time.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// Who may change a task, or start a run of it, is decided again on the task as it is under the
// task's lock, where the change is written or the run recorded: the check before it is only there
// so a refused request waits for nothing.

const owner = `usr_${"b".repeat(24)}`;
const admin = `usr_${"a".repeat(24)}`;
const member = `usr_${"c".repeat(24)}`;

let t: TempRoot;
let time: FakeTime;
let store: TaskStore;
/** Whether the task's owner is deactivated now; a test flips it. */
let ownerDeactivated: boolean;

beforeEach(async () => {
  t = await openTempRoot("tasks-access", admin);
  time = new FakeTime();
  ownerDeactivated = false;
  store = new TaskStore(t.layout.partition("tasks"), t.layout, {
    clock: time.clock,
    idempotencyWindowMs: 3_600_000,
    results: { discard: async () => true },
  });
});

afterEach(async () => {
  await store.close();
  await t.remove();
});

function tasks(runner = {} as TaskRunner): Tasks {
  return new Tasks(
    store,
    runner,
    { shown: async (run) => run },
    { arm: () => true } as unknown as TaskSchedules,
    { roleOf: (_ws, principalId) => (principalId === admin ? "admin" : "member") },
    { isDeactivated: (principalId) => principalId === owner && ownerDeactivated },
    TASK_DEFAULTS,
    time.clock,
  );
}

async function ownersTask(): Promise<Task> {
  const now = new Date(time.clock()).toISOString();
  return store.create({
    id: newTaskId(),
    workspaceId: t.ws,
    ownerId: owner,
    name: "hourly",
    description: "",
    action: { tool: "probe__echo", arguments: {} },
    limits: { timeoutSeconds: 60, maxConcurrentRuns: 1 },
    trigger: { everySeconds: 3600 },
    lastScheduledAt: now,
    visibility: "private",
    createdAt: now,
    updatedAt: now,
  });
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
    const stopping = tasks().update({ workspaceId: t.ws, principalId: admin }, task.id, { trigger: null });
    const refused = expect(stopping).rejects.toMatchObject({ code: "task_not_found" });
    await settle();
    ownerDeactivated = false;
    await lock.release();
    await refused;
    expect(await store.taskIn(t.ws, task.id)).toEqual(task);
  });
});

describe("a member's run of a shared task", () => {
  it("is refused when its owner makes it private before the run is recorded: it is theirs alone", async () => {
    const task = (await store.update(await ownersTask(), (current) => ({
      ...current,
      visibility: "shared",
    }))) as Task;
    const start = vi.fn();
    const access = tasks({ start } as unknown as TaskRunner);
    const lock = await holdLock(task);
    const hiding = access.update({ workspaceId: t.ws, principalId: owner }, task.id, {
      visibility: "private",
    });
    await settle();
    const starting = access.run({ workspaceId: t.ws, principalId: member }, task.id, {});
    const refused = expect(starting).rejects.toMatchObject({ code: "task_not_found" });
    await settle();
    await lock.release();
    expect(await hiding).toMatchObject({ visibility: "private" });
    await refused;
    expect(start).not.toHaveBeenCalled();
  });
});
