import { link, mkdir, mkdtemp, rm, stat, symlink, truncate, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Skill } from "../../../../src/platform/skills/model.ts";
import { bodyOf } from "../../../../src/platform/skills/skill-body.ts";
import { readSkillDir, SkillFileCache } from "../../../../src/platform/skills/skill-dirs.ts";
import {
  HARD_LINK_REFUSED,
  MAX_SKILL_FILE_BYTES,
  THROUGH_LINK_REFUSED,
} from "../../../../src/platform/skills/skill-file.ts";
import { withFsHook } from "../../../helpers/fs-hook.ts";

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "atrium-skills-"));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function put(folder: string, text: string | undefined): Promise<void> {
  await mkdir(join(dir, folder), { recursive: true });
  if (text !== undefined) await writeFile(join(dir, folder, "SKILL.md"), text);
}

const file = (name: string, extra = "") =>
  `---\nname: ${name}\ndescription: About ${name}.\n${extra}---\nBody of ${name}.\n`;

describe("readSkillDir", () => {
  it("reads every <name>/SKILL.md with the scope it is given", async () => {
    await put("beta", file("beta"));
    await put("alpha", file("alpha"));
    const { skills, problems } = await readSkillDir(dir, "org");
    expect(problems).toEqual([]);
    expect(skills.map((s) => [s.name, s.scope, s.bodyBytes]).sort()).toEqual([
      ["alpha", "org", 14],
      ["beta", "org", 13],
    ]);
  });

  it("keeps a skill's body out of its listing, and reads it from its SKILL.md when asked", async () => {
    await put("alpha", file("alpha"));
    const [alpha] = (await readSkillDir(dir, "org")).skills;
    expect(alpha).not.toHaveProperty("body");
    expect(await bodyOf(alpha as Skill)).toBe("Body of alpha.");
    await writeFile(join(dir, "alpha", "SKILL.md"), file("alpha", "metadata: [broken\n"));
    await expect(bodyOf(alpha as Skill)).rejects.toThrow(/changed into one that does not parse/);
    await rm(join(dir, "alpha", "SKILL.md"));
    await expect(bodyOf(alpha as Skill)).rejects.toThrow(/SKILL.md was removed since it was listed/);
  });

  it("reports a SKILL.md that is a hard link, saying to put a copy of the file itself in its place", async () => {
    await put("good", file("good"));
    await mkdir(join(dir, "linked"));
    await link(join(dir, "good", "SKILL.md"), join(dir, "linked", "SKILL.md"));
    const { skills, problems } = await readSkillDir(dir, "org");
    expect(skills).toEqual([]);
    expect(problems.map((p) => [p.name, p.message]).sort()).toEqual([
      ["good", `SKILL.md ${HARD_LINK_REFUSED}`],
      ["linked", `SKILL.md ${HARD_LINK_REFUSED}`],
    ]);
  });

  it("reads a platform SKILL.md that a package store hard-linked: the platform's skills ship with Atrium's code", async () => {
    // An install from ostree, Nix's optimised store or pnpm hard-links every file: each platform
    // skill was refused, and its advice (put a copy in its place) cannot be followed there.
    const store = join(dir, "store");
    await mkdir(store);
    await writeFile(join(store, "ab12"), file("using-atrium-files"));
    const platform = join(dir, "usr", "lib", "atrium", "skills");
    await mkdir(join(platform, "using-atrium-files"), { recursive: true });
    await link(join(store, "ab12"), join(platform, "using-atrium-files", "SKILL.md"));
    const { skills, problems } = await readSkillDir(platform, "platform", "vendored");
    expect(problems).toEqual([]);
    expect(skills.map((s) => s.name)).toEqual(["using-atrium-files"]);
  });

  it("reads each SKILL.md below the operator's linked scope folder as it pointed when the read pinned it", async () => {
    // An org folder that is a link is allowed; retargeted during a read, its next target is not read.
    // Before, each file was checked against where the link pointed at its own open: one read
    // served alpha from the first target and beta from the second.
    const [first, second] = [join(dir, "first"), join(dir, "second")];
    for (const target of [first, second]) {
      for (const name of ["alpha", "beta"]) {
        await mkdir(join(target, name), { recursive: true });
        const text = target === first ? file(name) : file(name).replace(`Body of ${name}.`, "ELSEWHERE");
        await writeFile(join(target, name, "SKILL.md"), text);
      }
    }
    const org = join(dir, "org");
    await symlink(first, org);
    await withFsHook(
      "realpath",
      (real) =>
        async (path, ...rest) => {
          const resolved = await real(path, ...rest);
          if (path === org) {
            await rm(org);
            await symlink(second, org);
          }
          return resolved;
        },
      async () => {
        const { skills, problems } = await readSkillDir(org, "org");
        expect(skills).toEqual([]);
        expect(problems.map((p) => [p.name, p.message]).sort()).toEqual([
          ["alpha", `SKILL.md ${THROUGH_LINK_REFUSED}`],
          ["beta", `SKILL.md ${THROUGH_LINK_REFUSED}`],
        ]);
      },
    );
  });

  it("stamps the provenance it is given on every skill", async () => {
    await put("alpha", file("alpha"));
    const { skills } = await readSkillDir(dir, "platform", "vendored");
    expect(skills.map((s) => s.provenance)).toEqual(["vendored"]);
  });

  it("reports and skips a malformed file, a mismatched folder and a folder without SKILL.md", async () => {
    await put("good", file("good"));
    await put("broken", "---\nname: broken\n---\nno description\n");
    await put("misnamed", file("other-name"));
    await put("empty", undefined);
    await put("Not_A_Name", file("not-a-name"));
    const { skills, problems } = await readSkillDir(dir, "workspace");
    expect(skills.map((s) => s.name)).toEqual(["good"]);
    const byName = Object.fromEntries(problems.map((p) => [p.name, p]));
    expect(Object.keys(byName).sort()).toEqual(["Not_A_Name", "broken", "empty", "misnamed"]);
    for (const p of problems) expect(p.scope).toBe("workspace");
    expect(byName.broken?.message).toMatch(/^description: /);
    expect(byName.misnamed?.message).toMatch(/"other-name" does not match its folder/);
    expect(byName.empty?.message).toMatch(/no readable SKILL\.md/);
    expect(byName.Not_A_Name?.message).toMatch(/not a valid skill name/);
  });

  it("reports a file claiming vendored provenance instead of reading it as vendored", async () => {
    await put("forged", file("forged", "metadata:\n  atrium:\n    provenance: vendored\n"));
    const { skills, problems } = await readSkillDir(dir, "workspace");
    expect(skills).toEqual([]);
    expect(problems).toEqual([
      {
        scope: "workspace",
        name: "forged",
        message: expect.stringMatching(/^metadata\.atrium\.provenance: /),
      },
    ]);
  });

  it("reports an operator's file whose body hides text, serving the others (adr/0132)", async () => {
    await put("good", file("good"));
    await put("hidden", file("hidden").replace("Body of hidden.", "Plain words.\n\u202eReversed."));
    const { skills, problems } = await readSkillDir(dir, "org");
    expect(skills.map((s) => s.name)).toEqual(["good"]);
    expect(problems).toEqual([
      {
        scope: "org",
        name: "hidden",
        message: expect.stringMatching(/^body: must not hold invisible .*line 2 of the body does$/),
      },
    ]);
  });

  it("reports a skill folder that is a symlink, never following it, whatever it points to", async () => {
    const elsewhere = await mkdtemp(join(tmpdir(), "atrium-skills-elsewhere-"));
    try {
      await mkdir(join(elsewhere, "linked"));
      await writeFile(join(elsewhere, "linked", "SKILL.md"), file("linked"));
      await writeFile(join(elsewhere, "secret.txt"), "not for members");
      await symlink(join(elsewhere, "linked"), join(dir, "linked"));
      await symlink(join(elsewhere, "missing"), join(dir, "dangling"));
      // A linked file (named like one) is skipped as a plain file is, not reported; a linked folder
      // named like no skill is still reported as a link.
      await symlink(join(elsewhere, "secret.txt"), join(dir, "README.md"));
      await symlink(join(elsewhere, "linked"), join(dir, "My_Skill"));
      await put("kept", file("kept"));
      const { skills, problems } = await readSkillDir(dir, "org");
      expect(skills.map((s) => s.name)).toEqual(["kept"]);
      const message =
        "a symlink, not a folder: Atrium does not follow links here; put the skill's folder itself here";
      expect(problems.sort((a, b) => a.name.localeCompare(b.name))).toEqual([
        { scope: "org", name: "dangling", message },
        { scope: "org", name: "linked", message },
        { scope: "org", name: "My_Skill", message },
      ]);
    } finally {
      await rm(elsewhere, { recursive: true, force: true });
    }
  });

  it("ignores dot-folders and loose files", async () => {
    await put(".draft", file("draft"));
    await put(".git", undefined);
    await writeFile(join(dir, "README.md"), "not a skill");
    await put("kept", file("kept"));
    const { skills, problems } = await readSkillDir(dir, "user");
    expect(skills.map((s) => s.name)).toEqual(["kept"]);
    expect(problems).toEqual([]);
  });

  it("reports a SKILL.md over the size limit, never reading it, and serves the others", async () => {
    await put("good", file("good"));
    await put("huge", file("huge"));
    // Sparse: a gigabyte on paper; read whole it would be held in memory on every listing.
    await truncate(join(dir, "huge", "SKILL.md"), 1024 ** 3);
    const { skills, problems } = await readSkillDir(dir, "user");
    expect(skills.map((s) => s.name)).toEqual(["good"]);
    expect(problems).toEqual([
      {
        scope: "user",
        name: "huge",
        message: `SKILL.md holds ${1024 ** 3} bytes, over the ${MAX_SKILL_FILE_BYTES} a SKILL.md may`,
      },
    ]);
  });

  it("reads a missing folder as no skills and no problems", async () => {
    expect(await readSkillDir(join(dir, "nope"), "user")).toEqual({ skills: [], problems: [] });
  });
});

describe("SkillFileCache", () => {
  it("a file edited on disk is read again; a broken edit is reported, and a fix is seen", async () => {
    const cache = new SkillFileCache();
    await put("alpha", file("alpha"));
    const described = async () => (await readSkillDir(dir, "org", undefined, cache)).skills[0]?.description;
    expect(await described()).toBe("About alpha.");

    await writeFile(join(dir, "alpha", "SKILL.md"), file("alpha").replace("About alpha.", "Edited, longer."));
    expect(await described()).toBe("Edited, longer.");

    await writeFile(join(dir, "alpha", "SKILL.md"), "---\nname: [broken\n---\n");
    const broken = await readSkillDir(dir, "org", undefined, cache);
    expect(broken.skills).toEqual([]);
    expect(broken.problems[0]?.name).toBe("alpha");

    await writeFile(join(dir, "alpha", "SKILL.md"), file("alpha"));
    expect(await described()).toBe("About alpha.");
  });

  it("an edit that keeps the file's size and modification time (cp -p, touch -r) is read again", async () => {
    // Long after the edits, so the racy-read rule keeps each parse and the stamp alone decides.
    const cache = new SkillFileCache(() => Date.now() + 60_000);
    const path = join(dir, "alpha", "SKILL.md");
    const kept = new Date("2024-01-01T00:00:00Z");
    const described = async () => (await readSkillDir(dir, "org", undefined, cache)).skills[0]?.description;
    await put("alpha", file("alpha").replace("About alpha.", "OLD guidance"));
    await utimes(path, kept, kept);
    expect(await described()).toBe("OLD guidance");

    await writeFile(path, file("alpha").replace("About alpha.", "NEW guidance"));
    await utimes(path, kept, kept);
    expect((await stat(path)).mtimeMs).toBe(kept.getTime());
    expect(await described()).toBe("NEW guidance");
  });

  it("keeps no parse of a file changed within the racy window of the read", async () => {
    await put("alpha", file("alpha"));
    const changed = await stat(join(dir, "alpha", "SKILL.md"));
    let now = Math.max(changed.mtimeMs, changed.ctimeMs) + 100;
    const cache = new SkillFileCache(() => now);
    expect((await readSkillDir(dir, "org", undefined, cache)).skills).toHaveLength(1);
    expect(cache.size).toBe(0);
    now += 5_000;
    expect((await readSkillDir(dir, "org", undefined, cache)).skills).toHaveLength(1);
    expect(cache.size).toBe(1);
  });

  it("lets go of a parse whose file is gone: a deleted skill, then the whole folder", async () => {
    // Long after the writes, so every parse is kept while its file is there.
    const cache = new SkillFileCache(() => Date.now() + 60_000);
    for (let round = 0; round < 20; round += 1) {
      await put(`churn-${round}`, file(`churn-${round}`));
      expect((await readSkillDir(dir, "user", undefined, cache)).skills).toHaveLength(1);
      await rm(join(dir, `churn-${round}`), { recursive: true });
    }
    await put("kept", file("kept"));
    expect((await readSkillDir(dir, "user", undefined, cache)).skills.map((s) => s.name)).toEqual(["kept"]);
    expect(cache.size).toBe(1);
    await rm(dir, { recursive: true });
    await readSkillDir(dir, "user", undefined, cache);
    expect(cache.size).toBe(0);
  });
});
