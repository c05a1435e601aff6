import type { PlatformApp } from "../app.ts";
import { type TaskSettings, tasksConfig } from "./config.ts";
import { taskRoutes } from "./routes.ts";
import { TaskRunner } from "./runner.ts";
import { TaskSchedules } from "./schedule.ts";
import { createTasksTools } from "./server.ts";
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
  async start({
    settings,
    storage,
    layout,
    workspaces,
    users,
    dispatch,
    events,
    clock,
    timers,
    scheduler,
    log,
  }) {
    const store = new TaskStore(storage, layout, {
      clock,
      idempotencyWindowMs: settings.idempotencyWindowHours * HOUR_MS,
    });
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
    const schedules = new TaskSchedules({
      scheduler,
      runner,
      store,
      workspaces,
      users,
      clock,
      log,
      minIntervalSeconds: settings.minIntervalSeconds,
    });
    // A crash left runs `running`: recorded `interrupted` when their workspace's runs are read,
    // before that read answers — at boot for the workspaces the crash left marked (ADR 0056).
    store.onLoad({
      loaded: (found) => schedules.adopt(found),
      unfinished: (found) => runner.interruptLeftovers(found),
    });
    let triggered = await store.boot(
      () => workspaces.ids(),
      (workspaceId) => workspaces.get(workspaceId) !== undefined,
    );
    const tasks = new Tasks(store, runner, schedules, workspaces, users, settings, clock);
    return {
      tools: createTasksTools(tasks),
      workspaceRoutes: taskRoutes(tasks),
      leftovers: store,
      // Armed once every source exists: a missed schedule's run calls a tool at once. The boot's
      // read of the triggered tasks is let go once they are armed.
      ready: () => {
        const due = triggered;
        triggered = [];
        return schedules.armAll(due);
      },
      stop: async () => {
        await runner.stop();
        await store.close();
      },
    };
  },
};
