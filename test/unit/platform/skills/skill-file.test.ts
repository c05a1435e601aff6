import { link, mkdir, mkdtemp, rename, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  HARD_LINK_REFUSED,
  readSkillFile,
  scopeFolderAllows,
  THROUGH_LINK_REFUSED,
} from "../../../../src/platform/skills/skill-file.ts";
import { pinFolder } from "../../../../src/storage/no-follow.ts";
import { withFsHook } from "../../../helpers/fs-hook.ts";

// The one reader of a skill's files opens the last step without following a link, then checks
// the handle is the file asked for below its scope folder: a folder on the way swapped for a link
// (after the listing read it) is not read through (adr/0139).

const TEXT = "---\nname: style\ndescription: d\n---\nInside.\n";

let scope: string;
let outside: string;

beforeEach(async () => {
  scope = await mkdtemp(join(tmpdir(), "atrium-skill-file-"));
  outside = await mkdtemp(join(tmpdir(), "atrium-outside-"));
  await mkdir(join(scope, "style"));
  await writeFile(join(scope, "style", "SKILL.md"), TEXT);
  await writeFile(join(outside, "SKILL.md"), "SECRET-FROM-OUTSIDE");
});
afterEach(async () => {
  await rm(scope, { recursive: true, force: true });
  await rm(outside, { recursive: true, force: true });
});

describe("the one reader of a skill's files", () => {
  it("refuses a file reached through a skill folder or versions folder that is a link", async () => {
    await symlink(outside, join(scope, "linked"));
    await mkdir(join(scope, ".history"));
    await symlink(outside, join(scope, ".history", "style"));
    for (const path of [join(scope, "linked", "SKILL.md"), join(scope, ".history", "style", "SKILL.md")]) {
      await expect(readSkillFile(path, scope)).rejects.toMatchObject({ reason: THROUGH_LINK_REFUSED });
    }
    await expect(readSkillFile(join(scope, "style", "SKILL.md"), scope)).resolves.toBe(TEXT);
  });

  it("refuses a file reached through a folder that is a looping link, or a link to a file, saying so rather than throwing", async () => {
    await symlink("loop", join(scope, "loop"));
    await symlink(join(outside, "SKILL.md"), join(scope, "to-a-file"));
    for (const folder of ["loop", "to-a-file"]) {
      await expect(readSkillFile(join(scope, folder, "SKILL.md"), scope)).rejects.toMatchObject({
        reason: THROUGH_LINK_REFUSED,
      });
    }
  });

  it("refuses a hard link to a file outside the scope folder, saying to put a copy in its place", async () => {
    await link(join(outside, "SKILL.md"), join(scope, "style", "notes.md"));
    await expect(readSkillFile(join(scope, "style", "notes.md"), scope)).rejects.toMatchObject({
      message: `notes.md ${HARD_LINK_REFUSED}`,
    });
    expect(HARD_LINK_REFUSED).toMatch(/put a copy of the file itself in its place$/);
  });

  it("reads below a scope folder that is itself a link only where the scope allows one (an operator's org folder)", async () => {
    const linkedScope = join(outside, "org");
    await symlink(scope, linkedScope);
    const path = join(linkedScope, "style", "SKILL.md");
    await expect(readSkillFile(path, await pinFolder(linkedScope, scopeFolderAllows("org")))).resolves.toBe(
      TEXT,
    );
    // Given as a path, it is a workspace's or a person's skills/, Atrium's own, never a link.
    await expect(readSkillFile(path, linkedScope)).rejects.toThrow(`SKILL.md ${THROUGH_LINK_REFUSED}`);
  });

  it("reads a file a save renamed another over after it was opened: it is still the one asked for", async () => {
    const path = join(scope, "style", "SKILL.md");
    await writeFile(join(scope, "style", ".tmp-next"), "next");
    await withFsHook(
      "readlink",
      (real) =>
        async (link, ...rest) => {
          await rename(join(scope, "style", ".tmp-next"), path);
          return real(link, ...rest);
        },
      () => expect(readSkillFile(path, scope)).resolves.toBe(TEXT),
    );
  });
});
