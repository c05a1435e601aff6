import { beforeAll, describe, expect, it } from "vitest";
import { type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { heldCall, honoMcpPath, postHeld } from "../helpers/held-calls.ts";
import { ADMIN, heldCallsAtrium } from "../helpers/held-calls-atrium.ts";
import { MCP_ERAS } from "../helpers/mcp-eras.ts";

// The backstop behind the cancellation of ADR 0154: an MCP answer is written only to a caller
// the gate still admits, asked once the answer is ready, on both routes. Here the change is made
// through the stores themselves, which cancel nothing (the routes do), and the call is released
// after it: its answer was made for someone who may no longer have it, and they get the gate's
// 404 (403 deactivated) instead. Before, the answer was written whatever had changed.

const { held, instance: started, team } = heldCallsAtrium();
let instance: TestAtrium;
beforeAll(() => {
  instance = started();
});

const changes = {
  archive: (ws: string) => instance.atrium.workspaces.archive(ws, testPrincipal(ADMIN).id),
  removal: (ws: string, member: string) =>
    instance.atrium.workspaces.removeMember(ws, testPrincipal(member).id, testPrincipal(ADMIN).id),
  deactivation: (_ws: string, member: string) =>
    instance.atrium.users.setDeactivated(testPrincipal(member).id, true),
};

let people = 0;

describe.each(MCP_ERAS)("an answer made after the caller's access ended (%s)", (era) => {
  it.each([
    ["archive", "the front door", 404, "workspace_not_found", false],
    ["archive", "the hono route", 404, "workspace_not_found", true],
    ["removal", "the front door", 404, "workspace_not_found", false],
    ["removal", "the hono route", 404, "workspace_not_found", true],
    ["deactivation", "the front door", 403, "forbidden", false],
    ["deactivation", "the hono route", 403, "forbidden", true],
  ] as const)(
    "%s, then %s answers the gate's %i (%s), not the call's result",
    async (change, _route, status, code, hono) => {
      people++;
      const bob = `bob${people}`;
      const ws = await team(bob);
      const tag = `${era}-${change}-${hono}`;
      const running = held.running(tag);
      const { headers, body } = heldCall(era, 1, "slow__wait", tag);
      const posted = postHeld(instance, bob, hono ? honoMcpPath(ws) : `/mcp/${ws}`, headers, body);
      await running;
      await changes[change](ws, bob);
      held.release(tag);
      const answer = await posted.answer;
      expect(held.cancelled).not.toContain(tag);
      expect(answer.status, answer.text).toBe(status);
      expect(JSON.parse(answer.text)).toMatchObject({ error: { code } });
    },
  );
});
