import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Run, Task } from "../../src/platform/tasks/model.ts";
import type { TestAtrium } from "../helpers/atrium.ts";
import { eventually } from "../helpers/eventually.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { canMount, type SmallDisk } from "../helpers/small-disk.ts";
import { type SmallDiskAtrium, startSmallDiskAtrium } from "../helpers/small-disk-atrium.ts";

// A cron instant that falls due while the data root is full cannot record itself on the task
// (lastScheduledAt), and used to be skipped with a "scheduled job failed" warning: the next instant
// ran as if nothing had been missed, and only a restart caught it up. It now counts as missed: the
// next instant after space is freed runs once for both, with missedSince the refused one, as a
// restart's catch-up would (adr/0165 amended). A real tmpfs, really full: skipped where mounting is
// not permitted.

const SKIPPED =
  "task schedule instant not run: the storage is full; the next instant runs once for it, as missed, once space has been freed";

describe.skipIf(!canMount)("a cron instant due on a full data root", () => {
  let scene: SmallDiskAtrium | undefined;
  let disk: SmallDisk;
  let time: FakeTime;
  let instance: TestAtrium;
  let captured: SmallDiskAtrium["captured"];
  let ws: string;
  beforeEach(async () => {
    time = new FakeTime(Date.UTC(2026, 11, 7, 8, 50));
    scene = await startSmallDiskAtrium({ time });
    ({ disk, instance, captured, ws } = scene);
  });
  afterEach(() => scene?.stop());

  it("is caught up, once, by the next instant after space is freed", async () => {
    const path = `/v1/workspaces/${ws}/tasks`;
    const created = await instance.rest("alice", "POST", path, {
      name: "hourly",
      action: { tool: "files__list", arguments: {} },
      trigger: { cron: "0 * * * *", timezone: "UTC" },
    });
    expect(created.status, await created.clone().text()).toBe(201);
    const task = (await created.json()) as Task;
    const runs = async () => {
      const response = await instance.rest("alice", "GET", `${path}/${task.id}/runs?limit=100`);
      return ((await response.json()) as { runs: Run[] }).runs.reverse();
    };

    disk.fill();
    await time.advance(15 * 60_000); // 09:05: the 09:00 instant met the full disk
    await eventually(() => expect(captured.lines.filter((line) => line.msg === SKIPPED)).toHaveLength(1));
    expect(captured.lines.find((line) => line.msg === SKIPPED)).toMatchObject({
      taskId: task.id,
      scheduledFor: "2026-12-07T09:00:00.000Z",
      reason: "ENOSPC",
    });
    await disk.free();
    expect(await runs()).toEqual([]);

    await time.advance(60 * 60_000); // 10:05
    await eventually(async () =>
      expect((await runs()).map((r) => r.execution.status)).toEqual(["succeeded"]),
    );
    await time.advance(60 * 60_000); // 11:05
    await eventually(async () => expect(await runs()).toHaveLength(2));
    expect((await runs()).map((r) => [r.scheduledFor, r.missedSince])).toEqual([
      ["2026-12-07T10:00:00.000Z", "2026-12-07T09:00:00.000Z"],
      ["2026-12-07T11:00:00.000Z", undefined],
    ]);
  }, 60_000);
});
