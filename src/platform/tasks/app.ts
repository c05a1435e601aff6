import type { PlatformApp } from "../app.ts";
import { TaskBootIndex } from "./boot-index.ts";
import { type TaskSettings, tasksConfig } from "./config.ts";
import { DeferredWork } from "./deferred-work.ts";
import { ResultFiles } from "./result-files.ts";
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
    const results = new ResultFiles({ dispatch, workspaces, settings, log });
    const store = new TaskStore(storage, layout, {
      clock,
      timers,
      idempotencyWindowMs: settings.idempotencyWindowHours * HOUR_MS,
      results,
      log,
    });
    const runner = new TaskRunner({
      store,
      dispatch,
      results,
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
    // What a crash left is found when a workspace's runs are read, at boot for the workspaces its
    // mark names (ADR 0056): runs left `running` are recorded `interrupted` before that read
    // answers; a result file such a run may have written unnamed, and the runs of a task whose
    // removal was cut short, go once tools may be called, in the background (ADR 0079).
    const leftovers = new DeferredWork(log);
    store.onLoad({
      loaded: (found) => schedules.adopt(found),
      unfinished: async (found) => {
        for (const run of await runner.interruptLeftovers(found)) {
          leftovers.add("deleting an interrupted run's result file", () => results.discardUnreferenced(run));
        }
      },
      orphaned: (runs) => {
        for (const run of runs) {
          if (run.execution.status === "running") {
            leftovers.add("deleting an interrupted run's result file", () =>
              results.discardUnreferenced(run),
            );
          }
        }
        leftovers.add("forgetting the runs of a deleted task", () => store.forgetOrphans(runs));
      },
    });
    let triggered = await store.boot(
      () => workspaces.ids(),
      (workspaceId) => workspaces.get(workspaceId) !== undefined,
    );
    const tasks = new Tasks(store, runner, results, schedules, workspaces, users, settings, clock);
    return {
      tools: createTasksTools(tasks),
      workspaceRoutes: taskRoutes(tasks),
      leftovers: store,
      // Armed once every source exists: a missed schedule's run calls a tool at once. The boot's
      // read of the triggered tasks is let go once they are armed.
      ready: () => {
        const due = triggered;
        triggered = [];
        leftovers.start();
        return schedules.armAll(due);
      },
      stop: async () => {
        await leftovers.stop();
        await store.close(await runner.stop());
      },
    };
  },
  // An archived workspace's schedule entries stay while it may be moved back (its tasks are not
  // armed meanwhile); once its archive is removed they name nothing. The index is files under
  // `_instance/tasks/schedules/`, one per entry, so a second reader of it writes no one else's.
  // It reads nothing below the archive (entries are named by workspace id), so leaves nothing there.
  archiveReleaser:
    ({ layout }) =>
    async (workspaceId) => {
      await new TaskBootIndex(layout).removeWorkspace(workspaceId);
      return [];
    },
};
