import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { EventBus } from "../../../../src/kernel/events.ts";
import { createLogger } from "../../../../src/log.ts";
import { StorageLayout } from "../../../../src/storage/paths.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { WorkspaceStore } from "../../../../src/workspace/store.ts";
import { eventually } from "../../../helpers/eventually.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { canMount, mountSmallDisk, type SmallDisk } from "../../../helpers/small-disk.ts";
import { taskRecord } from "../../../helpers/task-records.ts";
import { bootTasksApp, recordingDispatch } from "../../../helpers/tasks-app.ts";

// A fire records its instant on the task before its run starts (ADR 0044). When the disk fills in
// between, the run's record is refused: the instant was recorded as acted on, so no fire and no
// boot ever caught it up. The fire now puts the instant back, as it does for a graceful stop (ADR
// 0107), and the next instant runs once for it, with missedSince (adr/0165 amended). A real tmpfs:
// skipped where mounting is not permitted.

const OWNER = `usr_${"b".repeat(24)}`;

describe.skipIf(!canMount)("a fire whose run's record meets a full disk", () => {
  let disk: SmallDisk;
  beforeEach(async () => {
    disk = await mountSmallDisk("4m");
  });
  afterEach(async () => {
    await disk.unmount();
  });

  it("puts its instant back, and the next instant runs once for it, with missedSince", async () => {
    const root = join(disk.dir, "data");
    await mkdir(root);
    const layout = new StorageLayout(root);
    const workspaces = new WorkspaceStore(layout, new EventBus(createLogger("silent")));
    await workspaces.load();
    const ws = (await workspaces.create("W", OWNER)).id;
    const time = new FakeTime(Date.parse("2026-12-07T08:30:00Z"));
    const { dispatch, called } = recordingDispatch();
    const { store, runner, scheduler, schedules, triggered } = await bootTasksApp(layout, ws, time, dispatch);
    await schedules.armAll(triggered);
    const at = new Date(time.clock()).toISOString();
    const task = await store.create(
      taskRecord(ws, OWNER, time.clock(), {
        trigger: { cron: "0 * * * *", timezone: "UTC" },
        lastScheduledAt: at,
      }),
      NO_CALLER,
    );
    schedules.arm(task);

    // The disk fills just after the 09:00 fire records its instant, and has room again for its put-back.
    const update = store.update.bind(store);
    let updates = 0;
    store.update = async (...args) => {
      updates += 1;
      if (updates === 2) await disk.free();
      const next = await update(...args);
      if (updates === 1) disk.fill();
      return next;
    };
    await time.advance(30 * 60_000); // 09:00
    await eventually(() => expect(updates).toBe(2));
    await eventually(async () => expect((await store.taskIn(ws, task.id))?.lastScheduledAt).toBe(at));
    store.update = update;
    expect(called).toEqual([]);

    await time.advance(60 * 60_000); // 10:00
    await eventually(() => expect(called).toHaveLength(1));
    const [runId, ...more] = await store.runIds(task);
    expect(more).toEqual([]);
    expect(await store.run(ws, runId as string)).toMatchObject({
      trigger: "schedule",
      scheduledFor: "2026-12-07T10:00:00.000Z",
      missedSince: "2026-12-07T09:00:00.000Z",
    });
    await scheduler.stop();
    await runner.stop().then((unrecorded) => store.close(unrecorded));
  }, 60_000);
});
