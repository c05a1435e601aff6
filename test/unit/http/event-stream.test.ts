import { describe, expect, it } from "vitest";
import { openEventStream, sseEvent } from "../../../src/http/event-stream.ts";
import { WorkspaceEventLog } from "../../../src/kernel/event-log.ts";
import { type AtriumEvent, EventBus } from "../../../src/kernel/events.ts";
import { FakeTime, settle } from "../../helpers/fake-time.ts";
import { memoryLog } from "../../helpers/memory-log.ts";

const WS = "ws_00000000000000aa";
const ALICE = "usr_00000000000000000000000a";
const added: AtriumEvent = { type: "member.added", workspaceId: WS, principalId: ALICE, role: "member" };
/** An event about someone else: it does not move where ALICE's membership began. */
const bobAdded: AtriumEvent = {
  type: "member.added",
  workspaceId: WS,
  principalId: "usr_00000000000000000000000b",
  role: "member",
};
const HEARTBEAT = ": heartbeat\n\n";

function setup() {
  const bus = new EventBus(memoryLog().log);
  return { bus, log: new WorkspaceEventLog(bus), time: new FakeTime() };
}

/**
 * Reads what a stream has queued until it would wait; `done` when it ended. A read that is
 * still waiting is kept for the next call, so no chunk is lost between calls.
 */
function queuedReader(stream: ReadableStream<Uint8Array>) {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let pending: Promise<ReadableStreamReadResult<Uint8Array>> | undefined;
  return {
    async queued(): Promise<{ text: string; done: boolean }> {
      let text = "";
      for (;;) {
        pending ??= reader.read();
        const next = await Promise.race([pending, settle().then(() => "waiting" as const)]);
        if (next === "waiting") return { text, done: false };
        pending = undefined;
        if (next.done) return { text, done: true };
        text += decoder.decode(next.value);
      }
    },
    cancel: () => reader.cancel(),
  };
}

describe("sseEvent", () => {
  it("writes id, event and one data line, JSON escaping newlines", () => {
    expect(sseEvent("file.deleted", { name: "a\nb" }, "e-1")).toBe(
      'id: e-1\nevent: file.deleted\ndata: {"name":"a\\nb"}\n\n',
    );
    expect(sseEvent("reset", {})).toBe("event: reset\ndata: {}\n\n");
  });
});

describe("openEventStream", () => {
  it("opens with a heartbeat, then one every heartbeatMs of the injected timers", async () => {
    const { log, time } = setup();
    const stream = openEventStream(
      log,
      time.timers,
      { workspaceId: WS, principalId: ALICE, lastEventId: undefined },
      {
        heartbeatMs: 1000,
        maxQueuedBytes: 4096,
      },
    );
    const reader = queuedReader(stream);
    expect(await reader.queued()).toEqual({ text: HEARTBEAT, done: false });
    await time.advance(999);
    expect(await reader.queued()).toEqual({ text: "", done: false });
    await time.advance(1);
    expect(await reader.queued()).toEqual({ text: HEARTBEAT, done: false });
    await time.advance(2000);
    expect(await reader.queued()).toEqual({ text: HEARTBEAT + HEARTBEAT, done: false });
    await reader.cancel();
    expect(time.armed()).toBe(0);
  });

  it("ends a consumer that does not read once its queue would pass the bound, and disconnects it", async () => {
    const { bus, log, time } = setup();
    let disconnected = 0;
    const frame = sseEvent(
      "member.added",
      { workspaceId: WS, principalId: ALICE, role: "member" },
      `${log.epoch}-1`,
    );
    const bound = HEARTBEAT.length + 3 * frame.length;
    const stream = openEventStream(
      log,
      time.timers,
      { workspaceId: WS, principalId: ALICE, lastEventId: undefined, disconnect: () => disconnected++ },
      { heartbeatMs: 1000, maxQueuedBytes: bound },
    );
    for (let i = 0; i < 3; i++) bus.publish(added);
    expect(disconnected).toBe(0);
    bus.publish(added); // the fourth does not fit
    bus.publish(added);
    expect(disconnected).toBe(1);
    expect(time.armed()).toBe(0);
    const { text, done } = await queuedReader(stream).queued();
    expect(done).toBe(true);
    expect(text.length).toBeLessThanOrEqual(bound);
    expect(text.match(/^event: /gm)).toHaveLength(3);
  });

  it("a consumer that reads keeps up: its queue empties and nothing is dropped", async () => {
    const { bus, log, time } = setup();
    const stream = openEventStream(
      log,
      time.timers,
      { workspaceId: WS, principalId: ALICE, lastEventId: undefined },
      {
        heartbeatMs: 1000,
        maxQueuedBytes: 512,
      },
    );
    const reader = queuedReader(stream);
    let events = 0;
    for (let i = 0; i < 20; i++) {
      bus.publish(added);
      const { text, done } = await reader.queued();
      expect(done).toBe(false);
      events += text.match(/^event: /gm)?.length ?? 0;
    }
    expect(events).toBe(20);
    await reader.cancel();
  });

  it("a foreign Last-Event-ID gets one reset event before the live ones", async () => {
    const { bus, log, time } = setup();
    const stream = openEventStream(log, time.timers, {
      workspaceId: WS,
      principalId: ALICE,
      lastEventId: "00000000-5",
    });
    bus.publish(added);
    const { text } = await queuedReader(stream).queued();
    expect(text.match(/^event: .*$/gm)).toEqual(["event: reset", "event: member.added"]);
  });

  it("a replay larger than the bound is one reset, and the stream goes on live", async () => {
    const { bus, log, time } = setup();
    for (let i = 0; i < 40; i++) bus.publish(bobAdded);
    let disconnected = 0;
    const frame = sseEvent("member.added", { workspaceId: WS, principalId: ALICE, role: "member" }, "x");
    const stream = openEventStream(
      log,
      time.timers,
      {
        workspaceId: WS,
        principalId: ALICE,
        lastEventId: `${log.epoch}-1`,
        disconnect: () => disconnected++,
      },
      { heartbeatMs: 1000, maxQueuedBytes: HEARTBEAT.length + 10 * frame.length },
    );
    const reader = queuedReader(stream);
    expect((await reader.queued()).text.match(/^event: .*$/gm)).toEqual(["event: reset"]);
    bus.publish(added);
    const live = await reader.queued();
    expect(live.done).toBe(false);
    expect(live.text.match(/^event: .*$/gm)).toEqual(["event: member.added"]);
    expect(disconnected).toBe(0);
    await reader.cancel();
  });

  it("a replay within the bound is sent whole", async () => {
    const { bus, log, time } = setup();
    for (let i = 0; i < 5; i++) bus.publish(bobAdded);
    const stream = openEventStream(
      log,
      time.timers,
      { workspaceId: WS, principalId: ALICE, lastEventId: `${log.epoch}-2` },
      { heartbeatMs: 1000, maxQueuedBytes: 4096 },
    );
    const reader = queuedReader(stream);
    expect((await reader.queued()).text.match(/^id: .*$/gm)).toEqual(
      [3, 4, 5].map((seq) => `id: ${log.epoch}-${seq}`),
    );
    await reader.cancel();
  });
});
