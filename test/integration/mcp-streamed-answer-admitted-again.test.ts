import { existsSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { journalDuring } from "../helpers/fs-journal.ts";
import { heldCall, honoMcpPath, postHeld } from "../helpers/held-calls.ts";
import { ADMIN, heldCallsAtrium } from "../helpers/held-calls-atrium.ts";
import { MCP_ERAS } from "../helpers/mcp-eras.ts";

// A streamed (SSE) answer is written only to a caller the gate still admits (ADR 0154, amended).
// Its headers go out with its first progress report, and the change's cancellation runs only once
// the change's write is done — for an archive, once its flushes are. In between, the gate already
// refuses the caller (the index shows the change), and a call that finished then wrote its whole
// result into the stream, where the same call as JSON was refused. Now the caller is admitted once
// more before a stream's answer (one lookup per stream, not per progress report), and a refused
// one's stream ends without it, on both routes, in both eras.

const { held, instance: started, team } = heldCallsAtrium();
let instance: TestAtrium;
beforeAll(() => {
  instance = started();
});

let people = 0;

/** A new workspace with a new member whose streamed call of slow__wait has begun its stream. */
async function streamInFlight(era: (typeof MCP_ERAS)[number], tag: string, hono: boolean) {
  people++;
  const member = `bob${people}`;
  const ws = await team(member);
  const running = held.running(tag);
  const { headers, body } = heldCall(era, 1, "slow__wait", tag, true);
  const posted = postHeld(instance, member, hono ? honoMcpPath(ws) : `/mcp/${ws}`, headers, body);
  await running;
  return { ws, member, answer: posted.answer };
}

describe.each(MCP_ERAS)("%s", (era) => {
  it.each([
    ["the front door", false],
    ["the hono route", true],
  ] as const)(
    "a streamed result finished while an archive flushes is not written (%s)",
    async (_route, hono) => {
      const tag = `archive-${era}-${hono}`;
      const { ws, member, answer } = await streamInFlight(era, tag, hono);
      let reached: () => void = () => undefined;
      const atFlush = new Promise<void>((resolve) => {
        reached = resolve;
      });
      let letFlush: () => void = () => undefined;
      let gateDuring = 0;
      let streamed = { status: 0, text: "" };
      await journalDuring(
        async () => {
          const archived = instance.rest(ADMIN, "DELETE", `/v1/workspaces/${ws}`);
          // The workspace's folder has moved and the index has forgotten it; the root's flush waits.
          await atFlush;
          gateDuring = (await instance.rest(member, "GET", `/v1/workspaces/${ws}`)).status;
          held.release(tag);
          streamed = await answer;
          letFlush();
          expect((await archived).status).toBeLessThan(300);
        },
        {
          sync: (path) => {
            if (path !== instance.root || existsSync(join(instance.root, ws))) return undefined;
            reached();
            reached = () => undefined;
            return new Promise((resolve) => {
              letFlush = () => resolve(undefined);
            });
          },
        },
      );
      expect(gateDuring).toBe(404);
      expect(held.cancelled).not.toContain(tag);
      expect(streamed.status).toBe(200);
      expect(streamed.text).toContain("notifications/progress");
      expect(streamed.text).not.toContain('"result"');
    },
  );

  const throughTheStores = {
    archive: (ws: string) => instance.atrium.workspaces.archive(ws, testPrincipal(ADMIN).id),
    removal: (ws: string, member: string) =>
      instance.atrium.workspaces.removeMember(ws, testPrincipal(member).id, testPrincipal(ADMIN).id),
    deactivation: (_ws: string, member: string) =>
      instance.atrium.users.setDeactivated(testPrincipal(member).id, true),
  };

  it.each([
    ["archive", false],
    ["archive", true],
    ["removal", false],
    ["removal", true],
    ["deactivation", false],
    ["deactivation", true],
  ] as const)(
    "a streamed result that comes after the %s through the stores is not written (hono: %s)",
    async (change, hono) => {
      const tag = `stores-${era}-${change}-${hono}`;
      const { ws, member, answer } = await streamInFlight(era, tag, hono);
      await throughTheStores[change](ws, member);
      held.release(tag);
      const streamed = await answer;
      expect(held.cancelled).not.toContain(tag);
      expect(streamed.text).toContain("notifications/progress");
      expect(streamed.text).not.toContain('"result"');
    },
  );
});
