import { beforeAll, describe, expect, it } from "vitest";
import { type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { callThrough } from "../helpers/call-through.ts";
import { listTree } from "../helpers/fs-tree.ts";
import { ACCESS_ENDINGS, endAccess, heldCallsAtrium } from "../helpers/held-calls-atrium.ts";
import { holdingFsCall } from "../helpers/held-fs-call.ts";

// A notifications ack whose caller's access ends while it runs (an archive, a removal, a
// deactivation) acknowledges nothing, over MCP or REST (ADR 0154, amended): the member's acks file
// is renamed into place only once their access is asked again. Held where the acks folder is made.

const { instance: started, tools, team, newPerson } = heldCallsAtrium();
let instance: TestAtrium;
beforeAll(() => {
  instance = started();
});

/** `principalId`'s acks files and any temp file beside them, under the data root, the archive included. */
async function acksOf(principalId: string): Promise<string[]> {
  return (await listTree(instance.root)).filter(
    (path) => /\/acks\/[^/]+$/.test(path) && path.includes(principalId),
  );
}

describe.each(["mcp 2026-07-28", "rest POST /notifications/ack"] as const)(
  "an ack of all through %s",
  (entry) => {
    it.each(ACCESS_ENDINGS)("whose caller's access ends by %s mid-ack records nothing", async (change) => {
      const member = newPerson("nina");
      const principalId = testPrincipal(member).id;
      const ws = await team(member);
      await holdingFsCall(
        "mkdir",
        (path) => path.endsWith("/acks"),
        async (ack) => {
          const answer =
            entry === "rest POST /notifications/ack"
              ? instance.rest(member, "POST", `/v1/workspaces/${ws}/notifications/ack`, { all: true })
              : (await callThrough(instance, entry, member, ws, "notifications__ack", { all: true })).answer;
          await ack.reached;
          await endAccess(instance, change, ws, member);
          ack.release();
          await answer;
          await tools().settled();
        },
      );
      expect(await acksOf(principalId)).toEqual([]);
    });
  },
);
