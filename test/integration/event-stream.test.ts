import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { EVENT_STREAM_LIMITS } from "../../src/http/event-stream.ts";
import { UserDirectory } from "../../src/identity/users.ts";
import {
  bootstrapWorkspace,
  capturingLogger,
  startTestAtrium,
  type TestAtrium,
  testPrincipal,
} from "../helpers/atrium.ts";
import { eventually } from "../helpers/eventually.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { gate } from "../helpers/gate.ts";
import { addMember } from "../helpers/members.ts";
import { type SseFrame, SseReader } from "../helpers/sse.ts";

// The workspace event stream over real HTTP: GET /v1/workspaces/:ws/events (docs/events.md).
const time = new FakeTime();
const bobId = testPrincipal("bob").id;
let instance: TestAtrium;
let ws: string;

async function stream(user: string, workspaceId: string, lastEventId?: string): Promise<SseReader> {
  const headers: Record<string, string> = lastEventId === undefined ? {} : { "last-event-id": lastEventId };
  const response = await instance.rest(
    user,
    "GET",
    `/v1/workspaces/${workspaceId}/events`,
    undefined,
    headers,
  );
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
  // Its connection ends with it: an idle keep-alive socket left behind would hold a drain open.
  expect(response.headers.get("connection")).toBe("close");
  return new SseReader(response);
}

async function upload(user: string, name: string): Promise<string> {
  const response = await instance.rest(user, "POST", `/v1/workspaces/${ws}/files?name=${name}`, "hi", {
    "content-type": "text/plain",
  });
  expect(response.status).toBe(201);
  return ((await response.json()) as { id: string }).id;
}

/** The file id a `file.created` frame carries; undefined for any other frame. */
function fileIdOf(frame: SseFrame | undefined): string | undefined {
  return (frame?.data as { file?: { id: string } } | undefined)?.file?.id;
}

async function deleteFile(user: string, id: string): Promise<void> {
  expect((await instance.rest(user, "DELETE", `/v1/files/${id}`)).status).toBeLessThan(300);
}

beforeAll(async () => {
  instance = await startTestAtrium({ clock: time.clock, timers: time.timers });
  ws = await bootstrapWorkspace(instance, "alice");
  await addMember(instance.rest, "alice", ws, "bob", { principalId: bobId });
});

afterAll(async () => {
  await instance?.stop();
});

describe("GET /v1/workspaces/:ws/events", () => {
  it("sends each event as `event: <type>`, its payload as data and a sequence id, after a first heartbeat", async () => {
    const alice = await stream("alice", ws);
    expect(await alice.next()).toEqual({ comment: "heartbeat" });
    const id = await upload("alice", "one.txt");
    const event = await alice.nextEvent();
    expect(event).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{8}-[1-9][0-9]*$/),
      event: "file.created",
      data: {
        workspaceId: ws,
        file: {
          id,
          name: "one.txt",
          mimeType: "text/plain",
          size: 2,
          createdAt: new Date(time.clock()).toISOString(),
        },
      },
    });
    await deleteFile("alice", id);
    const next = await alice.nextEvent();
    expect(next?.event).toBe("file.deleted");
    const [epoch, seq] = (event?.id ?? "").split("-");
    expect(next?.id).toBe(`${epoch}-${Number(seq) + 1}`);
    await alice.close();
  });

  it("a reconnect with Last-Event-ID gets exactly what it missed, in order, then live events", async () => {
    const first = await stream("alice", ws);
    await upload("alice", "seen.txt");
    const seen = await first.nextEvent();
    await first.close();
    const missed = [await upload("alice", "missed-1.txt"), await upload("alice", "missed-2.txt")];
    const again = await stream("alice", ws, seen?.id);
    const replayed = [await again.nextEvent(), await again.nextEvent()];
    expect(replayed.map((e) => fileIdOf(e))).toEqual(missed);
    const live = await upload("alice", "live.txt");
    expect(fileIdOf(await again.nextEvent())).toBe(live);
    await again.close();
  });

  it("an id that fell out of the buffer, a foreign one or a malformed one gets one reset, then live events", async () => {
    const probe = await stream("alice", ws);
    await upload("alice", "probe.txt");
    const probeId = (await probe.nextEvent())?.id ?? "";
    await probe.close();
    const [epoch] = probeId.split("-");
    // The replay buffer keeps 1,000 events: 1,001 more push out the one after the probe.
    for (let i = 0; i < 1001; i++) {
      instance.atrium.events.publish({
        type: "member.added",
        workspaceId: ws,
        principalId: bobId,
        role: "member",
      });
    }
    for (const lastEventId of [probeId, "0badc0de-1", `${epoch}-99999999`, "not an id"]) {
      const reader = await stream("alice", ws, lastEventId);
      expect(await reader.nextEvent(), lastEventId).toEqual({ event: "reset", data: expect.any(Object) });
      await upload("alice", "after-reset.txt");
      expect((await reader.nextEvent())?.event, lastEventId).toBe("file.created");
      await reader.close();
    }
  });

  it("a private event never reaches another member, live or on replay", async () => {
    const bob = await stream("bob", ws);
    const alice = await stream("alice", ws);
    const privateId = await upload("alice", "mine.txt");
    // A workspace-wide event after it: bob's next event must be this one, not alice's file.
    const created = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/skills`, {
      name: "shared",
      description: "A skill everyone in the workspace sees.",
      body: "Do the thing.",
    });
    expect(created.status).toBe(201);
    const bobsFirst = await bob.nextEvent();
    expect(bobsFirst?.event).toBe("skill.changed");
    expect(bobsFirst?.data).toEqual({
      workspaceId: ws,
      scope: "workspace",
      name: "shared",
      change: "created",
    });
    expect(fileIdOf(await alice.nextEvent())).toBe(privateId);
    expect((await alice.nextEvent())?.event).toBe("skill.changed");
    await alice.close();
    await bob.close();
  });

  it("a removed member's stream closes at once; their reconnect is the stranger's 404", async () => {
    const carol = testPrincipal("carol").id;
    await addMember(instance.rest, "alice", ws, "carol", { principalId: carol });
    const reader = await stream("carol", ws);
    await reader.next();
    expect(
      (await instance.rest("alice", "DELETE", `/v1/workspaces/${ws}/members/${carol}`)).status,
    ).toBeLessThan(300);
    expect(await reader.rest()).toEqual([
      { id: expect.any(String), event: "member.removed", data: { workspaceId: ws, principalId: carol } },
    ]);
    const again = await instance.rest("carol", "GET", `/v1/workspaces/${ws}/events`);
    expect(again.status).toBe(404);
  });

  it("a newcomer's Last-Event-ID from before they joined gets reset, not the workspace's earlier events", async () => {
    const frank = testPrincipal("frank").id;
    // Alice learns an id; then something happens that frank, not yet a member, must not read.
    const alice = await stream("alice", ws);
    await instance.rest("alice", "POST", `/v1/workspaces/${ws}/skills`, {
      name: "before-frank",
      description: "Written before frank joined.",
      body: "Not his to see.",
    });
    const before = await alice.nextEvent();
    expect(before?.event).toBe("skill.changed");
    await instance.rest("alice", "DELETE", `/v1/workspaces/${ws}/skills/before-frank`);
    expect((await alice.nextEvent())?.event).toBe("skill.changed");
    await alice.close();
    await addMember(instance.rest, "alice", ws, "frank", { principalId: frank });
    const reader = await stream("frank", ws, before?.id);
    expect(await reader.nextEvent()).toEqual({ event: "reset", data: expect.any(Object) });
    await upload("frank", "after-joining.txt");
    expect((await reader.nextEvent())?.event).toBe("file.created");
    await reader.close();
  });

  it("a non-member gets the one 404 the wall gives, with no stream", async () => {
    const stranger = await instance.rest("mallory", "GET", `/v1/workspaces/${ws}/events`);
    const unknown = await instance.rest("mallory", "GET", "/v1/workspaces/ws_00000000000000ff/events");
    expect(stranger.status).toBe(404);
    expect(unknown.status).toBe(404);
    expect(stranger.headers.get("content-type")).toMatch(/json/);
    expect((await stranger.json()).error.code).toBe((await unknown.json()).error.code);
  });

  it("a HEAD answers the stream's headers and follows nothing; a stranger's HEAD is the wall's 404", async () => {
    const armed = time.armed();
    for (let i = 0; i < 5; i++) {
      const head = await instance.rest("alice", "HEAD", `/v1/workspaces/${ws}/events`);
      expect(head.status).toBe(200);
      expect(head.headers.get("content-type")).toMatch(/^text\/event-stream/);
      expect(await head.text()).toBe("");
    }
    // A stream opened for a HEAD would have armed its heartbeat and stayed following, holding
    // every event published after it.
    expect(time.armed()).toBe(armed);
    expect((await instance.rest("mallory", "HEAD", `/v1/workspaces/${ws}/events`)).status).toBe(404);
  });

  it("one person holds at most 32 streams at once, across workspaces; closing one frees its place", async () => {
    const other = await bootstrapWorkspace(instance, "carol");
    const second = await bootstrapWorkspace(instance, "carol");
    const held: SseReader[] = [];
    for (let i = 0; i < EVENT_STREAM_LIMITS.maxStreamsPerPerson; i++)
      held.push(await stream("carol", i % 2 ? second : other));
    const refused = await instance.rest("carol", "GET", `/v1/workspaces/${other}/events`);
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("too_many_streams");
    // A HEAD answers the status the GET would (docs/events.md).
    expect((await instance.rest("carol", "HEAD", `/v1/workspaces/${other}/events`)).status).toBe(429);
    // Someone else is not counted against her.
    const alice = await stream("alice", ws);
    await alice.close();
    await held.pop()?.close();
    await eventually(async () => {
      const again = await instance.rest("carol", "GET", `/v1/workspaces/${other}/events`);
      expect(again.status).toBe(200);
      await new SseReader(again).close();
    });
    for (const reader of held) await reader.close();
  });

  it("a client that does not read is disconnected once its queue passes the bound, not buffered", async () => {
    const slow = await stream("alice", ws);
    // Published in one synchronous run, so none of it can be written out in between: the
    // connection's queue passes its 1 MiB bound long before the last one.
    for (let i = 0; i < 20_000; i++) {
      instance.atrium.events.publish({
        type: "member.added",
        workspaceId: ws,
        principalId: bobId,
        role: "member",
      });
    }
    // The connection is cut, not drained: a clean end would first deliver every event that fit
    // the bound (thousands); the cut comes before the server wrote any of them out.
    expect((await slow.rest()).length).toBeLessThan(100);
    // Everyone else is unaffected.
    const alice = await stream("alice", ws);
    await upload("alice", "after-slow.txt");
    expect((await alice.nextEvent())?.event).toBe("file.created");
    await alice.close();
  });

  it("heartbeats come every 15 seconds of the injected clock", async () => {
    const alice = await stream("alice", ws);
    expect(await alice.next()).toEqual({ comment: "heartbeat" });
    await time.advance(15_000);
    expect(await alice.next()).toEqual({ comment: "heartbeat" });
    await time.advance(15_000);
    expect(await alice.next()).toEqual({ comment: "heartbeat" });
    await alice.close();
  });

  it("an org admin deactivating someone closes their streams in every workspace", async () => {
    const dave = testPrincipal("dave").id;
    const davesOwn = await bootstrapWorkspace(instance, "dave");
    await addMember(instance.rest, "alice", ws, "dave", { principalId: dave });
    const inAlices = await stream("dave", ws);
    const inOwn = await stream("dave", davesOwn);
    const alice = await stream("alice", ws);
    await Promise.all([inAlices.next(), inOwn.next(), alice.next()]);
    expect((await instance.rest("orgadmin-olga", "POST", `/v1/users/${dave}/deactivate`)).status).toBe(200);
    expect(await inAlices.rest()).toEqual([]);
    expect(await inOwn.rest()).toEqual([]);
    // Everyone else's stream goes on, and hears it, then the inbox entry it made.
    expect(await alice.nextEvent()).toMatchObject({
      event: "member.deactivated",
      data: { workspaceId: ws, principalId: dave },
    });
    expect((await alice.nextEvent())?.event).toBe("notification.created");
    await upload("alice", "still-here.txt");
    expect((await alice.nextEvent())?.event).toBe("file.created");
    await alice.close();
  });

  it("a deactivation that comes while a stream's request is being signed in refuses that stream", async () => {
    const erin = testPrincipal("erin").id;
    await addMember(instance.rest, "alice", ws, "erin", { principalId: erin });
    // Held where the request records what its credential says of erin, after its first check.
    const held = gate();
    const reached = gate();
    const record = UserDirectory.prototype.record;
    const spy = vi.spyOn(UserDirectory.prototype, "record").mockImplementation(async function (
      this: UserDirectory,
      principal,
    ) {
      if (principal.id === erin) {
        reached.open();
        await held.promise;
      }
      return record.call(this, principal);
    });
    try {
      const opening = instance.rest("erin", "GET", `/v1/workspaces/${ws}/events`);
      await reached.promise;
      expect((await instance.rest("orgadmin-olga", "POST", `/v1/users/${erin}/deactivate`)).status).toBe(200);
      held.open();
      // Opened now, it would follow the workspace with nobody left to close it.
      expect((await opening).status).toBe(403);
    } finally {
      spy.mockRestore();
    }
  });
});

describe("archiving a workspace", () => {
  it("ends every open stream of it", async () => {
    const created = await instance.rest("alice", "POST", "/v1/workspaces", { name: "Doomed" });
    const { id } = (await created.json()) as { id: string };
    const reader = await stream("alice", id);
    await reader.next();
    expect((await instance.rest("alice", "DELETE", `/v1/workspaces/${id}`)).status).toBe(204);
    expect(await reader.rest()).toEqual([]);
  });
});

describe("the event stream across a drain and a restart", () => {
  it("shutdown ends open streams instead of waiting for them; an id from before a restart gets reset", async () => {
    const { log, lines } = capturingLogger();
    const own = await startTestAtrium({ log });
    try {
      const owner = await bootstrapWorkspace(own, "erin");
      const open = await own.rest("erin", "GET", `/v1/workspaces/${owner}/events`);
      const reader = new SseReader(open);
      await own.rest("erin", "POST", `/v1/workspaces/${owner}/files?name=a.txt`, "a");
      const before = await reader.nextEvent();
      const restarted = await own.restart();
      try {
        expect(await reader.rest()).toEqual([]);
        const finished = lines.find((line) => line.msg === "shutdown finished");
        expect(finished).toMatchObject({ inFlight: 1, finished: 1, forced: 0 });
        const again = await restarted.rest("erin", "GET", `/v1/workspaces/${owner}/events`, undefined, {
          "last-event-id": before?.id ?? "",
        });
        const resumed = new SseReader(again);
        expect(await resumed.nextEvent()).toEqual({ event: "reset", data: expect.any(Object) });
        await resumed.close();
      } finally {
        await restarted.stop();
      }
    } finally {
      await own.stop();
    }
  });
});
