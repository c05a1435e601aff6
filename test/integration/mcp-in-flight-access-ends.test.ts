import { beforeAll, describe, expect, it } from "vitest";
import { type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { heldCall, honoMcpPath, postHeld } from "../helpers/held-calls.ts";
import { ADMIN, endAccess, gateRefusal, heldCallsAtrium } from "../helpers/held-calls-atrium.ts";
import { MCP_ERAS } from "../helpers/mcp-eras.ts";
import { addMember } from "../helpers/members.ts";

// A change that ends someone's access — an archive, a removal, a deactivation — also ends their
// MCP calls in flight, in both eras and on both routes (the front door and the hono route): the
// call is cancelled as its own client's notifications/cancelled would (its tool's signal aborts,
// a remote server is told), and the caller gets what the gate now answers them, 404 or 403, or a
// stream that ends without the answer. Before, the call ran on and its answer was delivered, and
// a stream kept streaming (ADR 0154). Each call here waits until cancelled or released, so no
// test waits on time; none is released before its change.

const { held, instance: started, team, newPerson } = heldCallsAtrium();
let instance: TestAtrium;
beforeAll(() => {
  instance = started();
});

describe.each(MCP_ERAS)("a call in flight when the caller's access ends (%s)", (era) => {
  it.each([
    ["archive", "a platform tool's call", "slow__wait", false, false],
    ["archive", "a platform tool's streamed call", "slow__wait", true, false],
    ["archive", "a remote server's tool's call", "remote__wait", false, false],
    ["archive", "a call on the hono route", "slow__wait", false, true],
    ["removal", "a platform tool's call", "slow__wait", false, false],
    ["removal", "a platform tool's streamed call", "slow__wait", true, false],
    ["removal", "a remote server's tool's call", "remote__wait", false, false],
    ["removal", "a call on the hono route", "slow__wait", false, true],
    ["deactivation", "a platform tool's call", "slow__wait", false, false],
    ["deactivation", "a platform tool's streamed call", "slow__wait", true, false],
    ["deactivation", "a remote server's tool's call", "remote__wait", false, false],
    ["deactivation", "a call on the hono route", "slow__wait", false, true],
  ] as const)(
    "on %s, %s is cancelled, and its answer is the gate's, never the call's",
    async (change, _what, tool, streamed, hono) => {
      const bob = newPerson("bob");
      const ws = await team(bob);
      const tag = `${era}-${change}-${tool}-${streamed}-${hono}`;
      const running = held.running(tag);
      const { headers, body } = heldCall(era, 1, tool, tag, streamed);
      const posted = postHeld(instance, bob, hono ? honoMcpPath(ws) : `/mcp/${ws}`, headers, body);
      await running;
      await endAccess(instance, change, ws, bob);
      // Cancelled by the time the change is answered; releasing it then changes nothing.
      expect(held.cancelled).toContain(tag);
      held.release(tag);
      const answer = await posted.answer;
      if (streamed) {
        // The stream began (its progress) before the change; it ends without the call's answer.
        expect(answer.status).toBe(200);
        expect(answer.text).toContain("notifications/progress");
        expect(answer.text).not.toContain('"result"');
      } else {
        const { status, code } = gateRefusal(change);
        expect(answer.status, answer.text).toBe(status);
        expect(JSON.parse(answer.text)).toMatchObject({ error: { code } });
      }
    },
  );

  it("a change cancels the calls of those whose access it ends, and no one else's", async () => {
    const [bob, carl] = [newPerson("bob"), newPerson("carl")];
    const here = await team(bob, carl);
    const there = await team(bob);
    const calls = {
      bobHere: [bob, here],
      bobThere: [bob, there],
      carlHere: [carl, here],
      adminHere: [ADMIN, here],
      adminThere: [ADMIN, there],
    } as const;
    const answers = new Map<string, Promise<{ status: number }>>();
    for (const [name, [who, ws]] of Object.entries(calls)) {
      const tag = `${era}-scope-${name}-${who}`;
      const running = held.running(tag);
      const { headers, body } = heldCall(era, 1, "slow__wait", tag);
      answers.set(name, postHeld(instance, who, `/mcp/${ws}`, headers, body).answer);
      await running;
    }
    const cancelledOf = () =>
      Object.entries(calls)
        .filter(([name, [who]]) => held.cancelled.includes(`${era}-scope-${name}-${who}`))
        .map(([name]) => name);

    await endAccess(instance, "removal", here, carl);
    expect(cancelledOf()).toEqual(["carlHere"]);
    await endAccess(instance, "deactivation", here, bob);
    expect(cancelledOf()).toEqual(["bobHere", "bobThere", "carlHere"]);
    await endAccess(instance, "archive", there, ADMIN);
    expect(cancelledOf()).toEqual(["bobHere", "bobThere", "carlHere", "adminThere"]);

    for (const [name, [who]] of Object.entries(calls)) held.release(`${era}-scope-${name}-${who}`);
    const statuses = await Promise.all([...answers.values()].map(async (answer) => (await answer).status));
    expect(Object.fromEntries([...answers.keys()].map((name, i) => [name, statuses[i]]))).toEqual({
      bobHere: 403,
      bobThere: 403,
      carlHere: 404,
      adminHere: 200,
      adminThere: 404,
    });
  });

  // A demotion leaves the person a member: nothing of the workspace is kept from them, so their
  // calls run on. What needs the admin role asks for it where it acts, under the store's lock
  // (ADR 0129), not when the call began.
  it("a demotion cancels nothing: the demoted admin's call is answered", async () => {
    const dana = newPerson("dana");
    const ws = await team();
    await addMember(instance.rest, ADMIN, ws, dana, { principalId: testPrincipal(dana).id }, "admin");
    const tag = `${era}-demotion-${dana}`;
    const running = held.running(tag);
    const { headers, body } = heldCall(era, 1, "slow__wait", tag);
    const posted = postHeld(instance, dana, `/mcp/${ws}`, headers, body);
    await running;
    const demoted = await instance.rest(
      ADMIN,
      "PATCH",
      `/v1/workspaces/${ws}/members/${testPrincipal(dana).id}`,
      {
        role: "member",
      },
    );
    expect(demoted.status).toBe(200);
    held.release(tag);
    const answer = await posted.answer;
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.text)).toMatchObject({ result: { content: [{ text: "released" }] } });
    expect(held.cancelled).not.toContain(tag);
  });
});
