import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  DROPPED_WARNING,
  HELD_PER_WORKSPACE,
  HELD_RETRY_EVERY_MS,
  HELD_WARNING,
} from "../../src/platform/notifications/held-posts.ts";
import type { Notification } from "../../src/platform/notifications/model.ts";
import type { TestAtrium } from "../helpers/atrium.ts";
import { eventually } from "../helpers/eventually.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { canMount, type SmallDisk } from "../helpers/small-disk.ts";
import { type SmallDiskAtrium, startSmallDiskAtrium } from "../helpers/small-disk-atrium.ts";

// What the runtime posts on its own (a connection that needs re-authorizing) when the data root is
// full: nobody is there to be answered 507 and try again, and the post used to be dropped with an
// "event subscriber failed" warning, so nobody learnt their connection was down. It is held in
// memory and posted once space is back: at the next retry, or before a later post (adr/0165
// amended). A real tmpfs, really full: the tests skip where mounting is not permitted.

describe.skipIf(!canMount)("a runtime notification on a full data root", () => {
  let scene: SmallDiskAtrium | undefined;
  let disk: SmallDisk;
  let time: FakeTime;
  let instance: TestAtrium;
  let captured: SmallDiskAtrium["captured"];
  let ws: string;
  beforeEach(async () => {
    time = new FakeTime(Date.UTC(2026, 11, 7, 12));
    scene = await startSmallDiskAtrium({ time });
    ({ disk, instance, captured, ws } = scene);
  });
  afterEach(() => scene?.stop());

  async function connectionDown(name: string): Promise<void> {
    instance.atrium.events.publish({
      type: "connection.state_changed",
      workspaceId: ws,
      name,
      state: "reauth_required",
      previous: "running",
    });
    await instance.atrium.events.settled();
  }

  async function inbox(): Promise<Notification[]> {
    const response = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/notifications?limit=100`);
    expect(response.status).toBe(200);
    return ((await response.json()) as { notifications: Notification[] }).notifications.reverse();
  }

  const told = (msg: string) => captured.lines.filter((line) => line.msg === msg);

  it("is held while the disk is full and posted at the next retry once space is freed", async () => {
    disk.fill();
    await connectionDown("crm");
    await connectionDown("mail");
    expect(await inbox()).toEqual([]);
    await time.advance(HELD_RETRY_EVERY_MS); // still full: kept
    expect(await inbox()).toEqual([]);
    expect(told(HELD_WARNING)).toHaveLength(1);
    expect(told("event subscriber failed")).toEqual([]);

    await disk.free();
    await time.advance(HELD_RETRY_EVERY_MS);
    await eventually(async () =>
      expect((await inbox()).map((n) => n.data?.connection)).toEqual(["crm", "mail"]),
    );
    await eventually(() => expect(told("notifications held for a full disk are posted")).toHaveLength(1));
    // Posted once: a later retry finds nothing held.
    await time.advance(HELD_RETRY_EVERY_MS);
    expect(await inbox()).toHaveLength(2);
  }, 60_000);

  it("is posted before a later notification, in the order they happened", async () => {
    disk.fill();
    await connectionDown("crm");
    await disk.free();
    await connectionDown("mail");
    expect((await inbox()).map((n) => n.data?.connection)).toEqual(["crm", "mail"]);
  }, 60_000);

  it("past its bound, later ones are dropped with one warning and the held ones are kept", async () => {
    disk.fill();
    for (let i = 0; i < HELD_PER_WORKSPACE + 3; i++) await connectionDown(`c${i}`);
    expect(told(DROPPED_WARNING)).toHaveLength(1);
    await disk.free();
    await time.advance(HELD_RETRY_EVERY_MS);
    await eventually(() => expect(told("notifications held for a full disk are posted")).toHaveLength(1));
    const posted = (await inbox()).map((n) => n.data?.connection);
    expect(posted).toHaveLength(HELD_PER_WORKSPACE);
    expect(posted[0]).toBe("c0");
    expect(posted.at(-1)).toBe(`c${HELD_PER_WORKSPACE - 1}`);
  }, 60_000);
});
