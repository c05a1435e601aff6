import { mkdir, readdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MAX_SKILL_FILE_BYTES } from "../../../../src/platform/skills/skill-file.ts";
import {
  MAX_SKILLS_PER_SCOPE,
  SkillWriter,
  type WriteTarget,
} from "../../../../src/platform/skills/writer.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

const ALICE = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";

let temp: TempRoot;
let writer: SkillWriter;
let target: WriteTarget;

beforeEach(async () => {
  temp = await openTempRoot("skill-limits", ALICE);
  writer = new SkillWriter(temp.layout, temp.workspaces, temp.events);
  target = { scope: "user", workspaceId: temp.ws, principalId: ALICE, access: NO_CALLER };
});

afterEach(async () => {
  await temp.remove();
});

describe("how many skills Atrium writes into one scope", () => {
  it(`creates none past ${MAX_SKILLS_PER_SCOPE}, saying so, and one again once one is gone`, async () => {
    const dir = temp.layout.userSkillsDir(ALICE);
    // Folders an operator (or earlier writes) left: each is a skill's place, counted as one.
    for (let i = 0; i < MAX_SKILLS_PER_SCOPE; i += 1) await mkdir(join(dir, `s-${i}`), { recursive: true });
    await expect(writer.create(target, "one-more", { description: "d", body: "b" })).rejects.toMatchObject({
      code: "too_many_skills",
      status: 409,
      message: expect.stringContaining(`already holds ${MAX_SKILLS_PER_SCOPE} skills`),
    });
    // Its history and a temp folder are not skills.
    await rm(join(dir, "s-0"), { recursive: true });
    await mkdir(join(dir, ".history", "s-1"), { recursive: true });
    await mkdir(join(dir, ".tmp-s-x"), { recursive: true });
    expect((await writer.create(target, "one-more", { description: "d", body: "b" })).name).toBe("one-more");
  });
});

describe("how large a SKILL.md Atrium writes", () => {
  const tooLarge = {
    code: "skill_too_large",
    status: 413,
    message: expect.stringContaining("Nothing was written"),
  };

  it(`refuses a create past ${MAX_SKILL_FILE_BYTES} bytes before writing anything`, async () => {
    // Counted in UTF-8 bytes: a two-byte character counts twice.
    const body = "é".repeat(MAX_SKILL_FILE_BYTES / 2);
    await expect(writer.create(target, "big", { description: "d", body })).rejects.toMatchObject(tooLarge);
    expect(await readdir(temp.layout.userSkillsDir(ALICE)).catch(() => [])).toEqual([]);
    expect((await writer.create(target, "big", { description: "d", body: "é".repeat(1000) })).name).toBe(
      "big",
    );
  });

  it("refuses an update that would pass it and keeps the skill as it was", async () => {
    await writer.create(target, "grows", { description: "d", body: "small" });
    const path = join(temp.layout.userSkillsDir(ALICE), "grows", "SKILL.md");
    const before = await readFile(path, "utf8");
    const body = "x".repeat(MAX_SKILL_FILE_BYTES);
    await expect(writer.update(target, "grows", { intent: "replace_body", body })).rejects.toMatchObject(
      tooLarge,
    );
    expect(await readFile(path, "utf8")).toBe(before);
    expect((await writer.history(target, "grows")).map((v) => v.version)).toEqual([1]);
  });
});

describe("what a deleted skill leaves", () => {
  it("nothing: its history goes with it, so create-and-delete of fresh names does not grow the scope", async () => {
    const dir = temp.layout.userSkillsDir(ALICE);
    for (let i = 0; i < 3; i += 1) {
      await writer.create(target, `churn-${i}`, { description: "d", body: "b" });
      await writer.update(target, `churn-${i}`, { intent: "replace_body", body: "c" });
      await writer.delete(target, `churn-${i}`);
    }
    expect(await readdir(join(dir, ".history"))).toEqual([]);
    await expect(writer.history(target, "churn-0")).rejects.toMatchObject({ code: "skill_not_found" });
    // A name created again starts its history anew.
    await writer.create(target, "churn-0", { description: "d", body: "b" });
    expect((await writer.history(target, "churn-0")).map((v) => v.version)).toEqual([1]);
  });
});
