import { describe, expect, it } from "vitest";
import { type AtriumEvent, EventBus } from "../../../src/kernel/events.ts";
import { gate } from "../../helpers/gate.ts";
import { memoryLog } from "../../helpers/memory-log.ts";

const WS_A = "ws_00000000000000aa";
const WS_B = "ws_00000000000000bb";
const added = (workspaceId: string): AtriumEvent => ({
  type: "member.added",
  workspaceId,
  principalId: "usr_000000000000000000000001",
  role: "member",
});
const deleted: AtriumEvent = {
  type: "file.deleted",
  workspaceId: WS_A,
  ownerId: "usr_000000000000000000000001",
  fileId: "fl_000000000000000000000001",
};

describe("EventBus", () => {
  it("delivers an event synchronously to each subscriber whose filter matches", () => {
    const bus = new EventBus(memoryLog().log);
    const everything: AtriumEvent[] = [];
    const membersOfA: string[] = [];
    const files: string[] = [];
    bus.subscribe({}, (e) => void everything.push(e));
    bus.subscribe({ types: ["member.added"], workspaceId: WS_A }, (e) => void membersOfA.push(e.principalId));
    bus.subscribe({ types: ["file.deleted", "file.created"] }, (e) => void files.push(e.type));
    bus.publish(added(WS_A));
    bus.publish(added(WS_B));
    bus.publish(deleted);
    expect(everything).toEqual([added(WS_A), added(WS_B), deleted]);
    expect(membersOfA).toEqual(["usr_000000000000000000000001"]);
    expect(files).toEqual(["file.deleted"]);
  });

  it("a throwing or rejecting subscriber is logged and the others still get the event", async () => {
    const { log, lines } = memoryLog();
    const bus = new EventBus(log);
    const seen: string[] = [];
    bus.subscribe({}, () => {
      throw new Error("reader broke");
    });
    bus.subscribe({}, async () => {
      throw new Error("reader rejected");
    });
    bus.subscribe({}, (e) => void seen.push(e.type));
    expect(() => bus.publish(deleted)).not.toThrow();
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(seen).toEqual(["file.deleted"]);
    const failures = lines.filter((l) => l.msg === "event subscriber failed");
    expect(failures.map((l) => (l.err as { message: string }).message)).toEqual([
      "reader broke",
      "reader rejected",
    ]);
    expect(failures[0]).toMatchObject({ event: "file.deleted", workspaceId: WS_A });
  });

  it("after unsubscribe a handler gets nothing; a handler unsubscribing mid-publish does not skip the others", () => {
    const bus = new EventBus(memoryLog().log);
    const seen: string[] = [];
    const stopFirst = bus.subscribe({}, () => {
      seen.push("first");
      stopFirst();
    });
    bus.subscribe({}, () => void seen.push("second"));
    bus.publish(deleted);
    bus.publish(deleted);
    expect(seen).toEqual(["first", "second", "second"]);
  });

  it("settles once the subscribers' work has ended, work an event started while waiting included", async () => {
    const bus = new EventBus(memoryLog().log);
    const first = gate();
    const second = gate();
    const ended: string[] = [];
    // The first handler's work publishes another event, as a task run's end does at a stop.
    bus.subscribe({ types: ["member.added"] }, async () => {
      await first.promise;
      bus.publish(deleted);
      ended.push("member.added");
    });
    bus.subscribe({ types: ["file.deleted"] }, async () => {
      await second.promise;
      ended.push("file.deleted");
    });
    bus.publish(added(WS_A));
    let settled = false;
    const settling = bus.settled().then(() => {
      settled = true;
    });
    first.open();
    await new Promise((resolve) => setImmediate(resolve));
    expect({ settled, ended }).toEqual({ settled: false, ended: ["member.added"] });
    second.open();
    await settling;
    expect(ended).toEqual(["member.added", "file.deleted"]);
    // A handler that fails has ended too: logged, and not waited for again.
    bus.subscribe({ types: ["file.deleted"] }, async () => {
      throw new Error("reader rejected");
    });
    bus.publish(deleted);
    await bus.settled();
  });
});
