import { existsSync } from "node:fs";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SkillWriter } from "../../../../src/platform/skills/writer.ts";
import { HOUSEKEEPING_TEMP_AGE_MS, RecoveryPass } from "../../../../src/storage/recovery.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { makeFifo, releaseFifo, unlessHung } from "../../../helpers/fifo.ts";
import { journalDuring } from "../../../helpers/fs-journal.ts";
import { memoryLog } from "../../../helpers/memory-log.ts";
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
    const target = { scope: "user", workspaceId: temp.ws, principalId: ALICE, access: NO_CALLER } as const;
    const journal = await journalDuring(() => writer.create(target, "my-style", DRAFT));
    const skills = temp.layout.userSkillsDir(ALICE);
    const made = journal.entries.flatMap((entry) => (entry.op === "mkdir" ? [entry.path] : []));
    for (const folder of [skills, join(skills, ".history"), join(skills, ".history", "my-style")])
      expect(made).toContain(folder);
    expect(journal.unflushedFolders()).toEqual([]);
  });

  it("a workspace skill's first version flushes `.history` and its folder in their parents", async () => {
    const target = {
      scope: "workspace",
      workspaceId: temp.ws,
      principalId: ALICE,
      access: NO_CALLER,
    } as const;
    const journal = await journalDuring(() => writer.create(target, "release-notes", DRAFT));
    const skills = temp.layout.workspaceSkillsDir(temp.ws);
    const made = journal.entries.flatMap((entry) => (entry.op === "mkdir" ? [entry.path] : []));
    expect(made).toContain(join(skills, ".history", "release-notes"));
    expect(journal.unflushedFolders()).toEqual([]);
  });
});

describe("boot recovery of skills", () => {
  it("leaves a SKILL.md that is a FIFO unread, warns once, and recovers the others", async () => {
    const { log, lines } = memoryLog();
    writer = new SkillWriter(temp.layout, temp.workspaces, temp.events, undefined, log);
    const skills = temp.layout.userSkillsDir(ALICE);
    await mkdir(join(skills, "piped"), { recursive: true });
    const fifo = join(skills, "piped", "SKILL.md");
    makeFifo(fifo);
    // A save whose version a crash lost: recovery records it.
    await mkdir(join(skills, "kept"), { recursive: true });
    await writeFile(join(skills, "kept", "SKILL.md"), "---\nname: kept\ndescription: d\n---\nb\n");
    try {
      const recovered = Promise.all([
        writer.recoverInstance(RecoveryPass.boot(Date.now())),
        writer.recoverInstance(RecoveryPass.housekeeping(Date.now())),
      ]).then(() => "done");
      expect(await unlessHung(recovered)).toBe("done");
    } finally {
      releaseFifo(fifo);
    }
    const warnings = lines.filter((line) => line.path === fifo);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.msg).toMatch(/SKILL\.md is a FIFO, not a regular file; delete the skill/);
    const target = { scope: "user", workspaceId: temp.ws, principalId: ALICE, access: NO_CALLER } as const;
    expect((await writer.history(target, "kept")).map((v) => v.version)).toEqual([1]);
  });

  it("housekeeping removes a history whose skill is gone only once it is an hour old (R9)", async () => {
    const target = { scope: "user", workspaceId: temp.ws, principalId: ALICE, access: NO_CALLER } as const;
    await writer.create(target, "moved-away", DRAFT);
    const skills = temp.layout.userSkillsDir(ALICE);
    await rename(join(skills, "moved-away"), join(temp.root, "moved-away"));
    const versions = join(skills, ".history", "moved-away");

    await writer.recoverInstance(RecoveryPass.housekeeping(Date.now()));
    expect(existsSync(versions)).toBe(true);
    await writer.recoverInstance(RecoveryPass.housekeeping(Date.now() + HOUSEKEEPING_TEMP_AGE_MS));
    expect(existsSync(versions)).toBe(false);
  });
});
