import { beforeAll, describe, expect, it } from "vitest";
import { type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { CALL_ENTRIES, callThrough } from "../helpers/call-through.ts";
import { eventually } from "../helpers/eventually.ts";
import { listTree } from "../helpers/fs-tree.ts";
import { postHeld } from "../helpers/held-calls.ts";
import { ACCESS_ENDINGS, endAccess, heldCallsAtrium } from "../helpers/held-calls-atrium.ts";
import { holdingFsCall } from "../helpers/held-fs-call.ts";
import { mcpRequest } from "../helpers/mcp-request.ts";

// A files__write or files__delete whose caller's access ends while it runs (an archive, a removal,
// a deactivation) changes nothing, whichever way it came: MCP in both eras, REST's tools/call or
// its REST twin, a task run as its owner (ADR 0154, amended). The change cancels the call and
// refuses its answer, but the tool goes on (here it is held where it opens its content file, or
// where its delete reads the folder under the partition's lock, as a slow disk would hold it):
// the store asks the caller's access just before its one rename, and a refusal leaves nothing.

const { instance: started, tools, team, newPerson } = heldCallsAtrium();
let instance: TestAtrium;
beforeAll(() => {
  instance = started();
});

/** Every file folder and staging folder of `principalId`'s under the data root, the archive included. */
async function filesOf(principalId: string): Promise<string[]> {
  const mine = new RegExp(`files/${principalId}/(fl_[0-9a-f]{24}|\\.tmp-[^/]*)/$`);
  return (await listTree(instance.root)).filter((path) => mine.test(path));
}

/** Once the held write has ended: stored, or its staging folder removed. */
async function writeEnded(principalId: string): Promise<void> {
  await eventually(async () =>
    expect((await filesOf(principalId)).filter((path) => path.includes("/.tmp-"))).toEqual([]),
  );
}

const isContent = (path: string) => /\/\.tmp-fl_[^/]*\/content$/.test(path);

describe.each(CALL_ENTRIES)("a files__write through %s", (entry) => {
  it.each(ACCESS_ENDINGS)("whose caller's access ends by %s mid-write stores nothing", async (change) => {
    const member = newPerson("fred");
    const principalId = testPrincipal(member).id;
    const ws = await team(member);
    await holdingFsCall("open", isContent, async (write) => {
      const args = { name: "late.txt", text: "after the end" };
      const { answer } = await callThrough(instance, entry, member, ws, "files__write", args);
      await write.reached;
      expect(await filesOf(principalId)).toHaveLength(1);
      await endAccess(instance, change, ws, member);
      write.release();
      await answer;
      await writeEnded(principalId);
    });
    expect(await filesOf(principalId)).toEqual([]);
  });
});

/** A file of `member`'s in `ws`, and the partition's listing loaded, so a delete reads its folder's stamp. */
async function storedFile(member: string, ws: string): Promise<string> {
  const uploaded = await instance.rest(member, "POST", `/v1/workspaces/${ws}/files?name=kept.txt`, "kept");
  expect(uploaded.status).toBe(201);
  expect((await instance.rest(member, "GET", `/v1/workspaces/${ws}/files`)).status).toBe(200);
  return ((await uploaded.json()) as { id: string }).id;
}

type DeleteEntry = "mcp 2025-11-25" | "rest DELETE /v1/files/:id";

describe.each(["mcp 2025-11-25", "rest DELETE /v1/files/:id"] as DeleteEntry[])(
  "a file delete through %s",
  (entry) => {
    it.each(ACCESS_ENDINGS)("whose caller's access ends by %s mid-delete leaves the file", async (change) => {
      const member = newPerson("fred");
      const principalId = testPrincipal(member).id;
      const ws = await team(member);
      const id = await storedFile(member, ws);
      const ownerDir = (path: string) => path.endsWith(`/files/${principalId}`);
      await holdingFsCall("stat", ownerDir, async (removal) => {
        const answer =
          entry === "mcp 2025-11-25"
            ? (await callThrough(instance, "mcp 2025-11-25", member, ws, "files__delete", { id })).answer
            : instance.rest(member, "DELETE", `/v1/files/${id}`);
        await removal.reached;
        await endAccess(instance, change, ws, member);
        removal.release();
        await answer;
        await writeEnded(principalId);
      });
      expect((await filesOf(principalId)).map((path) => path.split("/").at(-2))).toEqual([id]);
    });
  },
);

describe("a files__write whose 2025-era client's connection closes mid-write", () => {
  // A disconnection is not a cancellation (the MCP transport; adr/0065): the closed connection
  // aborts the call's signal, but the caller's access has not ended, so the write lands. A write
  // that checked that signal before its commit lost a client's file to a network blip (the revert
  // of ADR 0154's first cut); the store asks the caller's access instead.
  it("still stores the file", async () => {
    const member = newPerson("fred");
    const principalId = testPrincipal(member).id;
    const ws = await team(member);
    await holdingFsCall("open", isContent, async (write) => {
      const message = {
        jsonrpc: "2.0" as const,
        id: 1,
        method: "tools/call",
        params: { name: "files__write", arguments: { name: "kept.txt", text: "through a blip" } },
      };
      const { headers, body } = mcpRequest("2025-11-25", message);
      const posted = postHeld(instance, member, `/mcp/${ws}`, headers, body);
      posted.answer.catch(() => undefined);
      await write.reached;
      posted.request.destroy();
      await eventually(() => expect(tools().signals.get("files__write")?.aborted).toBe(true));
      write.release();
      await tools().settled();
    });
    expect(await filesOf(principalId)).toHaveLength(1);
    const listed = await instance.rest(member, "GET", `/v1/workspaces/${ws}/files`);
    expect(((await listed.json()) as { files: { name: string }[] }).files.map((file) => file.name)).toEqual([
      "kept.txt",
    ]);
  });
});
