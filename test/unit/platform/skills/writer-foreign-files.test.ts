import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { frontMatterOf } from "../../../../src/platform/skills/parse.ts";
import { SkillWriter, type WriteTarget } from "../../../../src/platform/skills/writer.ts";
import { RecoveryPass } from "../../../../src/storage/recovery.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { makeFifo, releaseFifo, unlessHung } from "../../../helpers/fifo.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// SKILL.md files and saved versions Atrium did not write under today's rules: front matter with
// no closing delimiter, a skill saved before the 256 KiB limit (adr/0098), a FIFO an operator left.

const ALICE = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";
let temp: TempRoot;
let writer: SkillWriter;
let target: WriteTarget;
let dir: string;

beforeEach(async () => {
  temp = await openTempRoot("skill-foreign-files", ALICE);
  writer = new SkillWriter(temp.layout, temp.workspaces, temp.events);
  target = { scope: "user", workspaceId: temp.ws, principalId: ALICE, access: NO_CALLER };
  dir = temp.layout.userSkillsDir(ALICE);
});
afterEach(() => temp.remove());

async function place(name: string, text: string): Promise<string> {
  await mkdir(join(dir, name), { recursive: true });
  const path = join(dir, name, "SKILL.md");
  await writeFile(path, text);
  return path;
}

describe("front matter with no closing delimiter", () => {
  it("a new body is written after a closed front matter, never into it", async () => {
    // gray-matter reads such front matter to the end of the file: an empty body.
    const path = await place("open", "---\nname: open\ndescription: d\n");
    const skill = await writer.update(target, "open", { intent: "replace_body", body: "license: injected" });
    const { data, content } = frontMatterOf(await readFile(path, "utf8"));
    expect(data).toEqual({ name: "open", description: "d" });
    expect(skill.body).toBe("license: injected");
    expect(content.trim()).toBe("license: injected");
    const titled = await writer.update(target, "open", {
      intent: "replace_body",
      body: "# Title\n\nSome text: with a colon",
    });
    expect(titled.body).toBe("# Title\n\nSome text: with a colon");
  });
});

describe("a skill saved before the size limit", () => {
  it("keeps its saved versions readable", async () => {
    await writer.create(target, "old", { description: "d", body: "b" });
    const versions = join(dir, ".history", "old");
    await writeFile(join(versions, "2.md"), `---\nname: old\ndescription: d\n---\n${"x".repeat(300_000)}\n`);
    await writeFile(
      join(versions, "2.json"),
      JSON.stringify({ version: 2, savedAt: new Date().toISOString() }),
    );
    expect((await writer.history(target, "old")).map((v) => v.version)).toEqual([1, 2]);
    expect((await writer.version(target, "old", 2)).text).toContain("x".repeat(1000));
  });

  it("can be shortened with a new body", async () => {
    await place("huge", `---\nname: huge\ndescription: d\n---\n${"x".repeat(300_000)}\n`);
    await expect(
      writer.update(target, "huge", { intent: "replace_body", body: "short" }),
    ).resolves.toMatchObject({
      body: "short",
    });
  });
});

describe("a FIFO in a skill's history", () => {
  it("does not hang boot recovery", async () => {
    await writer.create(target, "h", { description: "d", body: "b" });
    const fifo = join(dir, ".history", "h", "2.md");
    makeFifo(fifo);
    try {
      expect(await unlessHung(writer.recoverInstance(RecoveryPass.boot(Date.now())).then(() => "done"))).toBe(
        "done",
      );
    } finally {
      releaseFifo(fifo);
    }
  });
});
