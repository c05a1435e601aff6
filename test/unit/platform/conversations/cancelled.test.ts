import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { listConversations } from "../../../../src/platform/conversations/finder.ts";
import { openConversationStore, said } from "../../../helpers/conversation-store.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// A conversations tool's call cancelled before its write (its caller's access ended, adr/0154
// amended) changes nothing, even when the tool goes on after its caller was told it failed: the
// store checks the call's signal just before the one write that makes the change.

const ALICE = `usr_${"a".repeat(24)}`;
let temp: TempRoot;
let time: FakeTime;

beforeEach(async () => {
  temp = await openTempRoot("conversations-cancelled", ALICE);
  time = new FakeTime();
});
afterEach(async () => temp.remove());

const reason = new Error("the caller's access ended");
function cancelled(): AbortSignal {
  const cancel = new AbortController();
  cancel.abort(reason);
  return cancel.signal;
}

describe("a conversation change whose call was cancelled", () => {
  it("a create or a fork makes no conversation, an append adds no event, a delete keeps it", async () => {
    const store = openConversationStore(temp, time);
    const { id } = await store.create(temp.ws, ALICE, "kept", [said("one")]);
    await expect(store.create(temp.ws, ALICE, "late", [], cancelled())).rejects.toBe(reason);
    await expect(store.fork(temp.ws, ALICE, id, {}, cancelled())).rejects.toBe(reason);
    await expect(store.append(temp.ws, ALICE, id, [said("two")], cancelled())).rejects.toBe(reason);
    await expect(store.delete(temp.ws, ALICE, id, cancelled())).rejects.toBe(reason);
    const listed = await listConversations(store.indexes, temp.ws, ALICE, {});
    expect(listed.conversations.map((conversation) => conversation.id)).toEqual([id]);
    expect((await store.readWhole(temp.ws, ALICE, id)).events.map((event) => event.type)).toEqual([
      "title",
      "message",
    ]);
  });
});
