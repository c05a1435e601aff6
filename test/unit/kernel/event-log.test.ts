import { describe, expect, it } from "vitest";
import { type EventSink, type LoggedEvent, WorkspaceEventLog } from "../../../src/kernel/event-log.ts";
import { type AtriumEvent, EventBus } from "../../../src/kernel/events.ts";
import { memoryLog } from "../../helpers/memory-log.ts";

const WS_A = "ws_00000000000000aa";
const WS_B = "ws_00000000000000bb";
const ALICE = "usr_00000000000000000000000a";
const BOB = "usr_00000000000000000000000b";

const added = (workspaceId: string, principalId = BOB): AtriumEvent => ({
  type: "member.added",
  workspaceId,
  principalId,
  role: "member",
});
const alicesFile = (fileId: string): AtriumEvent => ({
  type: "file.deleted",
  workspaceId: WS_A,
  ownerId: ALICE,
  fileId,
});

/** A sink that records what reached it, as a stream would send it. */
function recorder(): EventSink & { seen: Array<LoggedEvent | "reset" | "closed"> } {
  const seen: Array<LoggedEvent | "reset" | "closed"> = [];
  return {
    seen,
    deliver: (event) => void seen.push(event),
    reset: () => void seen.push("reset"),
    close: () => void seen.push("closed"),
  };
}

function setup(capacity?: number): { bus: EventBus; log: WorkspaceEventLog } {
  const bus = new EventBus(memoryLog().log);
  return { bus, log: new WorkspaceEventLog(bus, capacity) };
}

const ids = (seen: Array<LoggedEvent | string>): string[] =>
  seen.map((entry) => (typeof entry === "string" ? entry : entry.id));

describe("WorkspaceEventLog", () => {
  it("numbers each workspace's events 1, 2, … under the process epoch, payload without type and ownerId", () => {
    const { bus, log } = setup();
    const a = recorder();
    log.follow(WS_A, ALICE, undefined, a);
    bus.publish(added(WS_A));
    bus.publish(added(WS_B));
    bus.publish(alicesFile("fl_1"));
    expect(log.epoch).toMatch(/^[0-9a-f]{8}$/);
    expect(ids(a.seen)).toEqual([`${log.epoch}-1`, `${log.epoch}-2`]);
    expect(a.seen[1]).toEqual({
      id: `${log.epoch}-2`,
      type: "file.deleted",
      data: { workspaceId: WS_A, fileId: "fl_1" },
      ownerId: ALICE,
    });
  });

  it("replays what came after Last-Event-ID, and nothing when nothing was missed", () => {
    const { bus, log } = setup();
    for (let i = 0; i < 3; i++) bus.publish(added(WS_A));
    const resumed = recorder();
    log.follow(WS_A, ALICE, `${log.epoch}-1`, resumed);
    expect(ids(resumed.seen)).toEqual([`${log.epoch}-2`, `${log.epoch}-3`]);
    const current = recorder();
    log.follow(WS_A, ALICE, `${log.epoch}-3`, current);
    expect(current.seen).toEqual([]);
  });

  it("resumes from the event just before the oldest kept, and resets one further back", () => {
    const { bus, log } = setup(3);
    for (let i = 0; i < 5; i++) bus.publish(added(WS_A)); // keeps 3, 4, 5
    const edge = recorder();
    log.follow(WS_A, ALICE, `${log.epoch}-2`, edge);
    expect(ids(edge.seen)).toEqual([`${log.epoch}-3`, `${log.epoch}-4`, `${log.epoch}-5`]);
    const tooOld = recorder();
    log.follow(WS_A, ALICE, `${log.epoch}-1`, tooOld);
    expect(tooOld.seen).toEqual(["reset"]);
  });

  it.each([
    ["another process's epoch", "0000beef-1"],
    ["a sequence not reached yet", "EPOCH-9"],
    ["no sequence", "EPOCH-"],
    ["sequence zero", "EPOCH-0"],
    ["a negative sequence", "EPOCH--1"],
    ["garbage", "hello"],
    ["a huge sequence", "EPOCH-99999999999999999999"],
  ])("answers %s with one reset, then live events", (_why, given) => {
    const { bus, log } = setup();
    bus.publish(added(WS_A));
    const sink = recorder();
    log.follow(WS_A, ALICE, given.replace("EPOCH", log.epoch), sink);
    bus.publish(added(WS_A));
    expect(ids(sink.seen)).toEqual(["reset", `${log.epoch}-2`]);
  });

  it("keeps a private event from everyone but its owner, live and on replay", () => {
    const { bus, log } = setup();
    const alice = recorder();
    const bob = recorder();
    log.follow(WS_A, ALICE, undefined, alice);
    log.follow(WS_A, BOB, undefined, bob);
    bus.publish(alicesFile("fl_1"));
    bus.publish(added(WS_A, "usr_00000000000000000000000c"));
    expect(ids(alice.seen)).toEqual([`${log.epoch}-1`, `${log.epoch}-2`]);
    expect(ids(bob.seen)).toEqual([`${log.epoch}-2`]);
    const bobAgain = recorder();
    log.follow(WS_A, BOB, `${log.epoch}-1`, bobAgain);
    const bobFromStart = recorder();
    bus.publish(alicesFile("fl_2"));
    log.follow(WS_A, BOB, `${log.epoch}-2`, bobFromStart);
    expect(ids(bobAgain.seen)).toEqual([`${log.epoch}-2`]);
    expect(bobFromStart.seen).toEqual([]);
  });

  it("never replays from before the reader's current membership began (joining, rejoining): reset instead", () => {
    const { bus, log } = setup();
    const CAROL = "usr_00000000000000000000000c";
    const removed = (principalId: string): AtriumEvent => ({
      type: "member.removed",
      workspaceId: WS_A,
      principalId,
    });
    bus.publish(added(WS_A, CAROL)); // 1
    bus.publish(removed(CAROL)); // 2
    bus.publish(added(WS_A, BOB)); // 3: bob's membership begins
    bus.publish(added(WS_A, CAROL)); // 4
    const replay = (principalId: string, seq: number): Array<LoggedEvent | string> => {
      const sink = recorder();
      log.follow(WS_A, principalId, `${log.epoch}-${seq}`, sink);
      return sink.seen;
    };
    expect(replay(BOB, 1)).toEqual(["reset"]);
    // Just before the join: nothing he missed predates it, so it resumes, starting at his own join.
    expect(ids(replay(BOB, 2))).toEqual([`${log.epoch}-3`, `${log.epoch}-4`]);
    // A member since before the process started (alice here) replays all that is kept.
    expect(ids(replay(ALICE, 1))).toEqual([`${log.epoch}-2`, `${log.epoch}-3`, `${log.epoch}-4`]);
    bus.publish(removed(BOB)); // 5
    bus.publish(added(WS_A, "usr_00000000000000000000000d")); // 6, while bob is out
    bus.publish(added(WS_A, BOB)); // 7: he rejoins
    bus.publish(removed(CAROL)); // 8
    // His last id from the earlier membership does not carry him across the gap.
    expect(replay(BOB, 4)).toEqual(["reset"]);
    expect(replay(BOB, 5)).toEqual(["reset"]);
    expect(ids(replay(BOB, 6))).toEqual([`${log.epoch}-7`, `${log.epoch}-8`]);
  });

  it("closes a removed member's follow in that workspace only, after telling them", () => {
    const { bus, log } = setup();
    const inA = recorder();
    const inB = recorder();
    const alice = recorder();
    log.follow(WS_A, BOB, undefined, inA);
    log.follow(WS_B, BOB, undefined, inB);
    log.follow(WS_A, ALICE, undefined, alice);
    bus.publish({ type: "member.removed", workspaceId: WS_A, principalId: BOB });
    bus.publish(added(WS_A, "usr_00000000000000000000000c"));
    bus.publish(added(WS_B, "usr_00000000000000000000000c"));
    expect(ids(inA.seen)).toEqual([`${log.epoch}-1`, "closed"]);
    expect(ids(inB.seen)).toEqual([`${log.epoch}-1`]);
    expect(ids(alice.seen)).toEqual([`${log.epoch}-1`, `${log.epoch}-2`]);
  });

  it("closePerson ends their follows in every workspace; closeAll ends all and refuses new ones", () => {
    const { bus, log } = setup();
    const bobA = recorder();
    const bobB = recorder();
    const alice = recorder();
    log.follow(WS_A, BOB, undefined, bobA);
    log.follow(WS_B, BOB, undefined, bobB);
    log.follow(WS_A, ALICE, undefined, alice);
    log.closePerson(BOB);
    bus.publish(added(WS_A, "usr_00000000000000000000000c"));
    expect(bobA.seen).toEqual(["closed"]);
    expect(bobB.seen).toEqual(["closed"]);
    expect(ids(alice.seen)).toEqual([`${log.epoch}-1`]);
    log.closeAll();
    const late = recorder();
    log.follow(WS_A, ALICE, undefined, late);
    bus.publish(added(WS_A, "usr_00000000000000000000000d"));
    expect(ids(alice.seen)).toEqual([`${log.epoch}-1`, "closed"]);
    expect(late.seen).toEqual(["closed"]);
  });

  it("closeWorkspace ends every follow of that workspace and forgets its sequence", () => {
    const { bus, log } = setup();
    const inA = recorder();
    const inB = recorder();
    log.follow(WS_A, ALICE, undefined, inA);
    log.follow(WS_B, ALICE, undefined, inB);
    bus.publish(added(WS_A));
    log.closeWorkspace(WS_A);
    log.closeWorkspace("ws_00000000000000cc");
    bus.publish(added(WS_B));
    expect(ids(inA.seen)).toEqual([`${log.epoch}-1`, "closed"]);
    expect(ids(inB.seen)).toEqual([`${log.epoch}-1`]);
    const late = recorder();
    log.follow(WS_A, ALICE, `${log.epoch}-1`, late);
    expect(late.seen).toEqual(["reset"]);
  });

  it("an unfollowed sink gets nothing more", () => {
    const { bus, log } = setup();
    const sink = recorder();
    const unfollow = log.follow(WS_A, ALICE, undefined, sink);
    unfollow();
    bus.publish(added(WS_A));
    expect(sink.seen).toEqual([]);
  });

  it("past the total kept across workspaces, the least recently active workspace's events go first", () => {
    const bus = new EventBus(memoryLog().log);
    const log = new WorkspaceEventLog(bus, 3, 5);
    for (let i = 0; i < 3; i++) bus.publish(added(WS_A));
    for (let i = 0; i < 3; i++) bus.publish(added(WS_B));

    // A's three were dropped to keep five: a reader behind A is reset; one level with it misses nothing.
    const behindA = recorder();
    log.follow(WS_A, ALICE, `${log.epoch}-1`, behindA);
    expect(behindA.seen).toEqual(["reset"]);
    const levelWithA = recorder();
    log.follow(WS_A, ALICE, `${log.epoch}-3`, levelWithA);
    expect(levelWithA.seen).toEqual([]);
    // B, the more recent, kept all three; A's sequence goes on from where it was.
    const behindB = recorder();
    log.follow(WS_B, ALICE, `${log.epoch}-1`, behindB);
    expect(ids(behindB.seen)).toEqual([`${log.epoch}-2`, `${log.epoch}-3`]);
    bus.publish(added(WS_A));
    expect(ids(levelWithA.seen)).toEqual([`${log.epoch}-4`]);
  });
});
