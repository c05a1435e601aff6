import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../../../src/log.ts";
import { SkillService } from "../../../../src/platform/skills/service.ts";
import { SkillWriter, type WriteTarget } from "../../../../src/platform/skills/writer.ts";
import { RecoveryPass } from "../../../../src/storage/recovery.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// Folders an operator replaced with a symlink, on the way to a skill's files: the skill's own, and
// a workspace's or a person's `skills/`. Nothing is read, written, swept or recorded where such a
// link points; a linked skill folder is deleted as a link (adr/0139).

const ALICE = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";
const OUTSIDE_SKILL = "---\nname: style\ndescription: Outside.\n---\nSECRET-FROM-OUTSIDE-THE-ROOT\n";
let temp: TempRoot;
let outside: string;
let writer: SkillWriter;
let skills: string;
let target: WriteTarget;

beforeEach(async () => {
  temp = await openTempRoot("skill-linked-folders", ALICE);
  outside = await mkdtemp(join(tmpdir(), "atrium-outside-"));
  writer = new SkillWriter(temp.layout, temp.workspaces, temp.events);
  skills = temp.layout.workspaceSkillsDir(temp.ws);
  target = { scope: "workspace", workspaceId: temp.ws, principalId: ALICE, access: NO_CALLER };
});
afterEach(async () => {
  await temp.remove();
  await rm(outside, { recursive: true, force: true });
});

describe("a skill folder replaced with a symlink", () => {
  it("is left out of recovery: its target is neither swept nor recorded as a version", async () => {
    await writer.create(target, "style", { description: "How we write.", body: "Plainly." });
    await writeFile(join(outside, "SKILL.md"), OUTSIDE_SKILL);
    await writeFile(join(outside, ".tmp-operator-file"), "keep me");
    await rm(join(skills, "style"), { recursive: true });
    await symlink(outside, join(skills, "style"));

    // A boot pass takes temp entries of any age: the one in the link's target would go.
    await writer.recoverWorkspace(temp.ws, new Set(["skills"]), RecoveryPass.boot(Date.now()));

    const versions = join(skills, ".history", "style");
    expect((await readdir(versions)).sort()).toEqual(["1.json", "1.md"]);
    expect(await readFile(join(versions, "1.md"), "utf8")).toContain("Plainly.");
    expect(await readdir(outside)).toContain(".tmp-operator-file");
    // Nor are its versions served while the folder is a link.
    // Each read starts only when awaited: one started early and refused while the other was
    // awaited would be an unhandled rejection.
    for (const read of [() => writer.history(target, "style"), () => writer.version(target, "style", 1)]) {
      await expect(read()).rejects.toMatchObject({
        code: "skill_unreadable",
        message: expect.stringMatching(/its folder style is a symlink.*Delete the skill/),
      });
    }
  });

  it("is deleted as the update's refusal says, whatever its target holds, and the target is kept", async () => {
    await writeFile(join(outside, "notes.md"), "keep");
    await mkdir(skills);
    await symlink(outside, join(skills, "linked"));
    await symlink(join(outside, "nothing-here"), join(skills, "dangling"));
    await expect(writer.update(target, "linked", { intent: "replace_body", body: "x" })).rejects.toThrow(
      /Delete the skill \(that removes the link/,
    );
    await writer.delete(target, "linked");
    await writer.delete(target, "dangling");
    expect(await readdir(skills)).not.toContain("linked");
    expect(await readdir(skills)).not.toContain("dangling");
    expect(await readdir(outside)).toEqual(["notes.md"]);
  });
});

describe("a workspace's or a person's skills folder that is a symlink", () => {
  const SCOPE_REFUSED = {
    code: "skill_unreadable",
    message: expect.stringMatching(/skills folder is a symlink/),
  };

  it("is neither written, read, deleted nor recovered through", async () => {
    for (const scope of ["workspace", "user"] as const) {
      const scoped: WriteTarget = { ...target, scope };
      const dir = scope === "user" ? temp.layout.userSkillsDir(ALICE) : skills;
      const elsewhere = join(outside, scope);
      await mkdir(join(elsewhere, "kept"), { recursive: true });
      await writeFile(join(elsewhere, "kept", "SKILL.md"), OUTSIDE_SKILL.replace("style", "kept"));
      await writeFile(join(elsewhere, ".tmp-operator-file"), "keep me");
      await rm(dir, { recursive: true, force: true });
      await mkdir(join(dir, ".."), { recursive: true });
      await symlink(elsewhere, dir);

      await expect(writer.create(scoped, "style", { description: "d", body: "b" })).rejects.toMatchObject(
        SCOPE_REFUSED,
      );
      await expect(
        writer.update(scoped, "kept", { intent: "replace_body", body: "x" }),
      ).rejects.toMatchObject(SCOPE_REFUSED);
      await expect(writer.delete(scoped, "kept")).rejects.toMatchObject(SCOPE_REFUSED);
      await expect(writer.history(scoped, "kept")).rejects.toMatchObject(SCOPE_REFUSED);
      await writer.recoverWorkspace(temp.ws, new Set(["skills"]), RecoveryPass.boot(Date.now()));
      await writer.recoverInstance(RecoveryPass.boot(Date.now()));
      expect((await readdir(elsewhere)).sort(), scope).toEqual([".tmp-operator-file", "kept"]);
      expect(await readdir(join(elsewhere, "kept")), scope).toEqual(["SKILL.md"]);
    }
  });

  it("is listed as a problem, and what it points to is never listed", async () => {
    await mkdir(join(outside, "kept"));
    await writeFile(join(outside, "kept", "SKILL.md"), OUTSIDE_SKILL.replace("style", "kept"));
    await rm(skills, { recursive: true, force: true });
    await symlink(outside, skills);
    const service = new SkillService(
      temp.layout,
      { orgDir: undefined, maxInstructionsBytes: 32 * 1024 },
      createLogger("silent"),
    );
    const { skills: listed, problems } = await service.resolve(temp.ws, ALICE);
    expect(listed.filter((s) => s.scope === "workspace")).toEqual([]);
    expect(problems.filter((p) => p.scope === "workspace")).toEqual([
      { scope: "workspace", name: "skills", message: expect.stringMatching(/skills folder is a symlink/) },
    ]);
  });
});
