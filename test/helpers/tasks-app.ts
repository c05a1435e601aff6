import { everyLeaseLocal } from "../../src/kernel/leases.ts";
import { Scheduler } from "../../src/kernel/scheduler.ts";
import { TASK_DEFAULTS } from "../../src/platform/tasks/config.ts";
import { TaskRunner } from "../../src/platform/tasks/runner.ts";
import { type ScheduleDeps, TaskSchedules } from "../../src/platform/tasks/schedule.ts";
import { TaskStore } from "../../src/platform/tasks/store.ts";
import type { ToolDispatch } from "../../src/sources/dispatch.ts";
import type { StorageLayout } from "../../src/storage/paths.ts";
import type { FakeTime } from "./fake-time.ts";
import { memoryLog } from "./memory-log.ts";

/**
 * A dispatch whose every call answers "done" and is named in `called`. A run's call is held where
 * a change ending its owner's access cancels it (ADR 0154); none comes here, and its tool ends
 * when the call settles.
 */
export function recordingDispatch(): { dispatch: ToolDispatch; called: string[] } {
  const called: string[] = [];
  const call = async (_caller: unknown, name: string) => {
    called.push(name);
    return { content: [{ type: "text", text: "done" }] };
  };
  const callUntilAccessEnds = (...args: Parameters<typeof call>) => {
    const answered = call(...args);
    return Object.assign(answered, { toolSettled: answered.then(() => undefined) });
  };
  return { dispatch: { call, callUntilAccessEnds } as unknown as ToolDispatch, called };
}

/** One process's tasks app: its store, runner, scheduler and schedules, and what its boot found due. */
export interface TasksApp {
  store: TaskStore;
  runner: TaskRunner;
  scheduler: Scheduler;
  schedules: TaskSchedules;
  triggered: Awaited<ReturnType<TaskStore["boot"]>>;
  /** What a graceful stop does (graceful-stop.ts): the scheduler's stop, then the app's. */
  stop(): Promise<void>;
}

/**
 * Boots the tasks app over `layout`'s root on `time`, as a process does, with `ws` its one active
 * workspace: every caller is a member and nobody is deactivated. Its schedules are not yet armed.
 */
export async function bootTasksApp(
  layout: StorageLayout,
  ws: string,
  time: FakeTime,
  dispatch: ToolDispatch,
): Promise<TasksApp> {
  const log = memoryLog().log;
  const store = new TaskStore(layout.partition("tasks"), layout, {
    clock: time.clock,
    log,
    idempotencyWindowMs: 3_600_000,
    results: { discard: async () => true },
  });
  const runner = new TaskRunner({
    store,
    dispatch,
    results: { keep: async (_run, result) => ({ result }) },
    workspaces: { roleOf: () => "member" },
    users: { isDeactivated: () => false },
    events: { publish: () => undefined },
    clock: time.clock,
    timers: time.timers,
    settings: TASK_DEFAULTS,
    log,
  });
  const scheduler = new Scheduler({ clock: time.clock, timers: time.timers, leases: everyLeaseLocal, log });
  const schedules = new TaskSchedules({
    scheduler,
    runner,
    store,
    workspaces: { get: () => ({}), roleOf: () => "member" },
    users: { isDeactivated: () => false },
    clock: time.clock,
    log,
    minIntervalSeconds: 60,
  } as unknown as ScheduleDeps);
  const triggered = await store.boot(
    () => [ws],
    () => true,
  );
  const stop = async () => {
    await Promise.all([scheduler.stop(), runner.stop().then((unrecorded) => store.close(unrecorded))]);
  };
  return { store, runner, scheduler, schedules, triggered, stop };
}
