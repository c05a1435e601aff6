import type { PlatformApp } from "../app.ts";
import { type TaskSettings, tasksConfig } from "./config.ts";
import { IdempotencyKeys } from "./idempotency.ts";
import { taskRoutes } from "./routes.ts";
import { TaskRunner } from "./runner.ts";
import { TaskSchedules } from "./schedule.ts";
import { createTasksServer } from "./server.ts";
import { TaskStore } from "./store.ts";
import { Tasks } from "./tasks.ts";

const HOUR_MS = 60 * 60 * 1000;

/**
 * Tasks: the workspace's unattended work (ADR 0044). A task is defined once and run — now, on a
 * cron schedule in a time zone, or on an interval — as its owner through the one dispatch.
 */
export const tasksApp: PlatformApp<TaskSettings> = {
  name: "tasks",
  config: tasksConfig,
  async start({ settings, storage, workspaces, users, dispatch, events, clock, timers, scheduler, log }) {
    const store = new TaskStore(storage);
    const idempotency = new IdempotencyKeys(clock, settings.idempotencyWindowHours * HOUR_MS);
    const unfinished = await store.load(workspaces.ids(), (run) => idempotency.restore(run));
    const runner = new TaskRunner({
      store,
      dispatch,
      workspaces,
      users,
      events,
      clock,
      timers,
      settings,
      log,
    });
    // A crash left these `running`: they are recorded `interrupted` before anything is served.
    await runner.interruptLeftovers(unfinished);
    const schedules = new TaskSchedules({ scheduler, runner, store, workspaces, users, clock, log });
    const tasks = new Tasks(store, runner, schedules, idempotency, workspaces, settings, clock);
    return {
      createServer: () => createTasksServer(tasks),
      workspaceRoutes: taskRoutes(tasks),
      leftovers: store,
      // Armed once every source exists: a missed schedule's run calls a tool at once.
      ready: () => schedules.armAll(),
      stop: () => runner.stop(),
    };
  },
};
