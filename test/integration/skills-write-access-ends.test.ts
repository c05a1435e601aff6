import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { CALL_ENTRIES, type CallEntry, callThrough } from "../helpers/call-through.ts";
import { listTree } from "../helpers/fs-tree.ts";
import { ACCESS_ENDINGS, endAccess, heldCallsAtrium } from "../helpers/held-calls-atrium.ts";
import { holdingFsCall } from "../helpers/held-fs-call.ts";

// A skill's create, update or delete whose caller's access ends while it runs (an archive, a
// removal, a deactivation) changes nothing, whichever way it came (ADR 0154, amended): the writer
// asks the caller's access just before the one rename that commits it. A user skill lives outside
// the workspace, so an archive does not take it along: only that check keeps a write made through
// a workspace its writer has lost from landing. Held where the new SKILL.md's temp file is opened,
// or where a delete looks for the skill, as a slow disk would hold them.

const { instance: started, tools, team, newPerson } = heldCallsAtrium();
let instance: TestAtrium;
beforeAll(() => {
  instance = started();
});

/** What `principalId`'s user skills folder holds: each entry, and each SKILL.md's text. */
async function userSkillsOf(principalId: string): Promise<Record<string, string>> {
  const dir = `_instance/users/${principalId}/skills/`;
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
const skill = { scope: "user", name: "late", description: "d", body: "after the end" };

type CreateEntry = CallEntry | "rest POST /skills";

describe.each([...CALL_ENTRIES, "rest POST /skills"] as CreateEntry[])(
  "a user skill created through %s",
  (entry) => {
    it.each(ACCESS_ENDINGS)("whose caller's access ends by %s mid-write is not there", async (change) => {
      const member = newPerson("sam");
      const principalId = testPrincipal(member).id;
      const ws = await team(member);
      await holdingFsCall("open", isTempSkillFile, async (write) => {
        const answer =
          entry === "rest POST /skills"
            ? instance.rest(member, "POST", `/v1/workspaces/${ws}/skills`, skill)
            : (await callThrough(instance, entry, member, ws, "skills__create", skill)).answer;
        await write.reached;
        await endAccess(instance, change, ws, member);
        write.release();
        await answer;
        await tools().settled();
      });
      expect(await userSkillsOf(principalId)).toEqual({});
    });
  },
);

/** A user skill of `member`'s named "kept", made through `ws` before anything is held. */
async function keptSkill(member: string, ws: string): Promise<void> {
  const made = { ...skill, name: "kept", body: "kept" };
  expect((await instance.rest(member, "POST", `/v1/workspaces/${ws}/skills`, made)).status).toBe(201);
}

describe.each(ACCESS_ENDINGS)("when the caller's access ends by %s mid-change", (change) => {
  it("an update through MCP leaves the skill as it was", async () => {
    const member = newPerson("sam");
    const principalId = testPrincipal(member).id;
    const ws = await team(member);
    await keptSkill(member, ws);
    const before = await userSkillsOf(principalId);
    expect(before["kept/SKILL.md"]).toContain("kept");
    await holdingFsCall("open", isTempSkillFile, async (write) => {
      const args = { scope: "user", name: "kept", intent: "replace_body", body: "late" };
      const { answer } = await callThrough(instance, "mcp 2026-07-28", member, ws, "skills__update", args);
      await write.reached;
      await endAccess(instance, change, ws, member);
      write.release();
      await answer;
      await tools().settled();
    });
    expect(await userSkillsOf(principalId)).toEqual(before);
  });

  it("a delete over REST leaves the skill", async () => {
    const member = newPerson("sam");
    const principalId = testPrincipal(member).id;
    const ws = await team(member);
    await keptSkill(member, ws);
    const before = await userSkillsOf(principalId);
    expect(before["kept/SKILL.md"]).toContain("kept");
    const skillFile = (path: string) => path.endsWith("/kept/SKILL.md");
    await holdingFsCall("lstat", skillFile, async (removal) => {
      const answer = instance.rest(member, "DELETE", `/v1/workspaces/${ws}/skills/kept?scope=user`);
      await removal.reached;
      await endAccess(instance, change, ws, member);
      removal.release();
      await answer;
    });
    expect(await userSkillsOf(principalId)).toEqual(before);
  });
});
