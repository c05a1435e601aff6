import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SkillWriter } from "../../../../src/platform/skills/writer.ts";
import { journalDuring } from "../../../helpers/fs-journal.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// A skill's save is acknowledged once a power loss cannot undo it (adr/0024): every folder the
// save makes — a person's skills folder, `.history` and the skill's versions folder — is flushed
// in its parent, not only the files written into them.

const ALICE = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";
const DRAFT = { description: "How we write release notes.", body: "# Notes\n" };

let temp: TempRoot;
let writer: SkillWriter;

beforeEach(async () => {
  temp = await openTempRoot("skill-durability", ALICE);
  writer = new SkillWriter(temp.layout, temp.workspaces, temp.events);
});

afterEach(() => temp.remove());

describe("SkillWriter durability", () => {
  it("a person's first skill flushes each folder it makes in its parent", async () => {
    const target = { scope: "user", workspaceId: temp.ws, principalId: ALICE } as const;
    const journal = await journalDuring(() => writer.create(target, "my-style", DRAFT));
    const skills = temp.layout.userSkillsDir(ALICE);
    const made = journal.entries.flatMap((entry) => (entry.op === "mkdir" ? [entry.path] : []));
    for (const folder of [skills, join(skills, ".history"), join(skills, ".history", "my-style")])
      expect(made).toContain(folder);
    expect(journal.unflushedFolders()).toEqual([]);
  });

  it("a workspace skill's first version flushes `.history` and its folder in their parents", async () => {
    const target = { scope: "workspace", workspaceId: temp.ws, principalId: ALICE } as const;
    const journal = await journalDuring(() => writer.create(target, "release-notes", DRAFT));
    const skills = temp.layout.workspaceSkillsDir(temp.ws);
    const made = journal.entries.flatMap((entry) => (entry.op === "mkdir" ? [entry.path] : []));
    expect(made).toContain(join(skills, ".history", "release-notes"));
    expect(journal.unflushedFolders()).toEqual([]);
  });
});
