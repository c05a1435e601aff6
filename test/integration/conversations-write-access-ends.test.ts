import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { CALL_ENTRIES, type CallEntry, callThrough } from "../helpers/call-through.ts";
import { listTree } from "../helpers/fs-tree.ts";
import { ACCESS_ENDINGS, endAccess, heldCallsAtrium } from "../helpers/held-calls-atrium.ts";
import { holdingFsCall } from "../helpers/held-fs-call.ts";

// A conversation's create, fork, append, retitle or delete whose caller's access ends while it runs
// (an archive, a removal, a deactivation) changes nothing, whichever way it came (ADR 0154,
// amended): the store asks the caller's access just before the one write that makes the change
// seen (the log's exclusive create, its append under the log's lock, its removal). The call is held
// at a step before that write: the owner folder's mkdir for a new log, the log's stat under its
// lock for an append, and for a delete an append of the same caller's that holds the log's lock.

const { instance: started, tools, team, newPerson } = heldCallsAtrium();
let instance: TestAtrium;
beforeAll(() => {
  instance = started();
});

/** `principalId`'s conversation logs under the data root, the archive included, each with its bytes. */
async function logsOf(principalId: string): Promise<Record<string, string>> {
  const mine = new RegExp(`conversations/${principalId}/cv_[0-9a-f]+\\.jsonl$`);
  const paths = (await listTree(instance.root)).filter((path) => mine.test(path));
  const logs: Record<string, string> = {};
  for (const path of paths)
    logs[path.split("/").at(-1) ?? path] = await readFile(join(instance.root, path), "utf8");
  return logs;
}

/** A conversation of `member`'s in `ws`, made before anything is held. */
async function conversationOf(member: string, ws: string): Promise<string> {
  const created = await instance.rest(member, "POST", `/v1/workspaces/${ws}/conversations`, {
    title: "kept",
  });
  expect(created.status).toBe(201);
  return ((await created.json()) as { conversation: { id: string } }).conversation.id;
}

const ownerFolder = (principalId: string) => (path: string) => path.endsWith(`/conversations/${principalId}`);

type CreateEntry = CallEntry | "rest POST /conversations";

describe.each([...CALL_ENTRIES, "rest POST /conversations"] as CreateEntry[])(
  "a conversation created through %s",
  (entry) => {
    it.each(ACCESS_ENDINGS)("whose caller's access ends by %s mid-create is not there", async (change) => {
      const member = newPerson("cora");
      const principalId = testPrincipal(member).id;
      const ws = await team(member);
      await holdingFsCall("mkdir", ownerFolder(principalId), async (create) => {
        const args = {
          title: "late",
          events: [{ type: "message", role: "user", content: [{ type: "text", text: "hi" }] }],
        };
        const answer =
          entry === "rest POST /conversations"
            ? instance.rest(member, "POST", `/v1/workspaces/${ws}/conversations`, args)
            : (await callThrough(instance, entry, member, ws, "conversations__create", args)).answer;
        await create.reached;
        await endAccess(instance, change, ws, member);
        create.release();
        await answer;
        // The tool may run on after its call was cancelled and answered: its own end.
        await tools().settled();
      });
      expect(await logsOf(principalId)).toEqual({});
    });
  },
);

describe.each(ACCESS_ENDINGS)("when the caller's access ends by %s mid-change", (change) => {
  it.each([
    [
      "an append",
      "conversations__append",
      (id: string) => ({
        id,
        events: [{ type: "message", role: "user", content: [{ type: "text", text: "late" }] }],
      }),
    ],
    ["a retitle", "conversations__update", (id: string) => ({ id, title: "late" })],
  ] as const)("%s through MCP adds nothing to the log", async (_what, tool, args) => {
    const member = newPerson("cora");
    const principalId = testPrincipal(member).id;
    const ws = await team(member);
    const id = await conversationOf(member, ws);
    const before = await logsOf(principalId);
    await holdingFsCall(
      "stat",
      (path) => path.endsWith(`${id}.jsonl`),
      async (append) => {
        const { answer } = await callThrough(instance, "mcp 2026-07-28", member, ws, tool, args(id));
        await append.reached;
        await endAccess(instance, change, ws, member);
        append.release();
        await answer;
        await tools().settled();
      },
    );
    expect(await logsOf(principalId)).toEqual(before);
  });

  it("a fork through MCP makes no conversation", async () => {
    const member = newPerson("cora");
    const principalId = testPrincipal(member).id;
    const ws = await team(member);
    const id = await conversationOf(member, ws);
    const before = await logsOf(principalId);
    await holdingFsCall("mkdir", ownerFolder(principalId), async (fork) => {
      const { answer } = await callThrough(instance, "mcp 2025-11-25", member, ws, "conversations__fork", {
        id,
      });
      await fork.reached;
      await endAccess(instance, change, ws, member);
      fork.release();
      await answer;
      await tools().settled();
    });
    expect(await logsOf(principalId)).toEqual(before);
  });

  it("a delete over REST leaves the conversation", async () => {
    const member = newPerson("cora");
    const principalId = testPrincipal(member).id;
    const ws = await team(member);
    const id = await conversationOf(member, ws);
    const before = await logsOf(principalId);
    await holdingFsCall(
      "stat",
      (path) => path.endsWith(`${id}.jsonl`),
      async (lockHolder) => {
        // An append of the caller's holds the log's lock, so their delete waits behind it.
        const events = [{ type: "message", role: "user", content: [{ type: "text", text: "x" }] }];
        const appended = instance.rest(member, "POST", `/v1/workspaces/${ws}/conversations/${id}/events`, {
          events,
        });
        await lockHolder.reached;
        const deleted = instance.rest(member, "DELETE", `/v1/workspaces/${ws}/conversations/${id}`);
        await endAccess(instance, change, ws, member);
        lockHolder.release();
        await Promise.all([appended, deleted]);
      },
    );
    expect(await logsOf(principalId)).toEqual(before);
  });
});
