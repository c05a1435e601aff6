import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, expect, it } from "vitest";
import { type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { callThrough } from "../helpers/call-through.ts";
import { listTree } from "../helpers/fs-tree.ts";
import { ADMIN, heldCallsAtrium } from "../helpers/held-calls-atrium.ts";
import { holdingFsCall } from "../helpers/held-fs-call.ts";
import { addMember } from "../helpers/members.ts";

// A workspace skill is read by every member's agent, so only an admin changes it, and the role is
// asked when the write acts, not only when it is asked for (ADR 0154, amended): the writer asks
// it again with the caller's access, just before the one rename that commits a create, an update
// or a delete. An admin demoted while their write is held (at the temp file's open, or where a
// delete looks for the skill, as a slow disk or a queue behind the skill's lock would hold it)
// changes nothing.

const { instance: started, tools, team } = heldCallsAtrium();
let instance: TestAtrium;
beforeAll(() => {
  instance = started();
});

const BOB = "bob-demoted";

/** A workspace of ADMIN's with BOB in it as an admin, and, if asked, a workspace skill "kept". */
async function bobAdminIn(withKept: boolean): Promise<string> {
  const ws = await team();
  await addMember(instance.rest, ADMIN, ws, BOB, { principalId: testPrincipal(BOB).id }, "admin");
  if (withKept) {
    const kept = { scope: "workspace", name: "kept", description: "d", body: "kept" };
    expect((await instance.rest(ADMIN, "POST", `/v1/workspaces/${ws}/skills`, kept)).status).toBe(201);
  }
  return ws;
}

async function demoteBob(ws: string): Promise<void> {
  const id = testPrincipal(BOB).id;
  const demoted = await instance.rest(ADMIN, "PATCH", `/v1/workspaces/${ws}/members/${id}`, {
    role: "member",
  });
  expect(demoted.status).toBe(200);
}

/** What `ws`'s workspace skills folder holds: each entry, and each SKILL.md's text. */
async function workspaceSkillsOf(ws: string): Promise<Record<string, string>> {
  const dir = `${ws}/skills/`;
  const held: Record<string, string> = {};
  for (const path of await listTree(instance.root)) {
    if (!path.startsWith(dir) || path === dir || path.includes("/.history/")) continue;
    held[path.slice(dir.length)] = path.endsWith("/")
      ? ""
      : await readFile(join(instance.root, path), "utf8");
  }
  return held;
}

const isTempSkillFile = (path: string) => /\/\.tmp-SKILL\.md-[0-9a-f]+$/.test(path);

it("a workspace skill created over REST by an admin demoted mid-write is not there, and the create answers 403", async () => {
  const ws = await bobAdminIn(false);
  const skill = { scope: "workspace", name: "late-admin", description: "d", body: "after the demotion" };
  let status = 0;
  await holdingFsCall("open", isTempSkillFile, async (write) => {
    const answer = instance.rest(BOB, "POST", `/v1/workspaces/${ws}/skills`, skill);
    await write.reached;
    await demoteBob(ws);
    write.release();
    status = (await answer).status;
  });
  expect(status).toBe(403);
  expect(await workspaceSkillsOf(ws)).toEqual({});
});

it("a workspace skill created through MCP by an admin demoted mid-write is not there", async () => {
  const ws = await bobAdminIn(false);
  const skill = { scope: "workspace", name: "late-admin", description: "d", body: "after the demotion" };
  await holdingFsCall("open", isTempSkillFile, async (write) => {
    const { answer } = await callThrough(instance, "mcp 2025-11-25", BOB, ws, "skills__create", skill);
    await write.reached;
    await demoteBob(ws);
    write.release();
    await answer;
    await tools().settled();
  });
  expect(await workspaceSkillsOf(ws)).toEqual({});
});

it("a workspace skill's update through MCP by an admin demoted mid-write leaves it as it was", async () => {
  const ws = await bobAdminIn(true);
  const before = await workspaceSkillsOf(ws);
  expect(before["kept/SKILL.md"]).toContain("kept");
  await holdingFsCall("open", isTempSkillFile, async (write) => {
    const args = { scope: "workspace", name: "kept", intent: "replace_body", body: "late" };
    const { answer } = await callThrough(instance, "mcp 2025-11-25", BOB, ws, "skills__update", args);
    await write.reached;
    await demoteBob(ws);
    write.release();
    await answer;
    await tools().settled();
  });
  expect(await workspaceSkillsOf(ws)).toEqual(before);
});

it("a workspace skill's delete over REST by an admin demoted mid-delete leaves it", async () => {
  const ws = await bobAdminIn(true);
  const before = await workspaceSkillsOf(ws);
  expect(before["kept/SKILL.md"]).toContain("kept");
  const skillFile = (path: string) => path.endsWith(`/${ws}/skills/kept/SKILL.md`);
  let status = 0;
  await holdingFsCall("lstat", skillFile, async (removal) => {
    const answer = instance.rest(BOB, "DELETE", `/v1/workspaces/${ws}/skills/kept?scope=workspace`);
    await removal.reached;
    await demoteBob(ws);
    removal.release();
    status = (await answer).status;
  });
  expect(status).toBe(403);
  expect(await workspaceSkillsOf(ws)).toEqual(before);
});
