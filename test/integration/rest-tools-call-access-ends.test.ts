import { beforeAll, describe, expect, it } from "vitest";
import { type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { postHeld } from "../helpers/held-calls.ts";
import {
  ACCESS_ENDINGS,
  ADMIN,
  endAccess,
  gateRefusal,
  heldCallsAtrium,
} from "../helpers/held-calls-atrium.ts";
import { addMember } from "../helpers/members.ts";

// The REST twin of tools/call (POST /v1/workspaces/:ws/tools/call) ends with its caller's access
// as an MCP call does (ADR 0154, amended): an archive, a removal or a deactivation cancels it (its
// tool's signal aborts) and the caller gets what the gate now answers them; a change made through
// the stores, which cancels nothing, is caught once the result is ready. Before, the call never
// entered the MCP muxes the change cancels, nothing admitted it again, and a deactivated person's
// call ran on and was answered 200 with its result.

const { held, instance: started, team, newPerson } = heldCallsAtrium();
let instance: TestAtrium;
beforeAll(() => {
  instance = started();
});

/** A new workspace of the admin's with a new member, whose REST call of slow__wait is running. */
async function callInFlight(tag: string) {
  const member = newPerson("bob");
  const ws = await team(member);
  const running = held.running(tag);
  const posted = postHeld(
    instance,
    member,
    `/v1/workspaces/${ws}/tools/call`,
    { "content-type": "application/json" },
    { name: "slow__wait", arguments: { tag } },
  );
  await running;
  return { ws, member, answer: posted.answer };
}

describe("a REST tools/call in flight", () => {
  it.each(ACCESS_ENDINGS)("is cancelled by the %s, and answered the gate's refusal", async (change) => {
    const tag = `rest-${change}`;
    const { ws, member, answer } = await callInFlight(tag);
    await endAccess(instance, change, ws, member);
    // The cancellation ran before the change was answered.
    expect(held.cancelled).toContain(tag);
    const { status, text } = await answer;
    expect({ status, error: (JSON.parse(text) as { error?: unknown }).error }).toMatchObject({
      status: gateRefusal(change).status,
      error: { code: gateRefusal(change).code },
    });
  });

  it("runs on and is answered when another member is removed", async () => {
    const tag = "rest-bystander";
    const { ws, answer } = await callInFlight(tag);
    const other = newPerson("carol");
    await addMember(instance.rest, ADMIN, ws, other, { principalId: testPrincipal(other).id });
    await endAccess(instance, "removal", ws, other);
    expect(held.cancelled).not.toContain(tag);
    held.release(tag);
    const { status, text } = await answer;
    expect(status, text).toBe(200);
    expect(text).toContain("released");
  });

  const throughTheStores = {
    archive: (ws: string) => instance.atrium.workspaces.archive(ws, testPrincipal(ADMIN).id),
    removal: (ws: string, member: string) =>
      instance.atrium.workspaces.removeMember(ws, member, testPrincipal(ADMIN).id),
    deactivation: (_ws: string, member: string) => instance.atrium.users.setDeactivated(member, true),
  };

  it.each(ACCESS_ENDINGS)(
    "whose result comes after the %s through the stores is refused, not written",
    async (change) => {
      const tag = `rest-stores-${change}`;
      const { ws, member, answer } = await callInFlight(tag);
      await throughTheStores[change](ws, testPrincipal(member).id);
      held.release(tag);
      const { status, text } = await answer;
      expect(held.cancelled).not.toContain(tag);
      expect(text).not.toContain("released");
      expect(status, text).toBe(gateRefusal(change).status);
    },
  );
});
