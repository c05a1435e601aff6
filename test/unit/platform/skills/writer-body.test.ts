import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import matter from "gray-matter";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseSkill } from "../../../../src/platform/skills/parse.ts";
import { SkillWriter, type WriteTarget } from "../../../../src/platform/skills/writer.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

const ALICE = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";

let temp: TempRoot;
let writer: SkillWriter;
let target: WriteTarget;

beforeEach(async () => {
  temp = await openTempRoot("skill-body", ALICE);
  writer = new SkillWriter(temp.layout, temp.workspaces, temp.events);
  target = { scope: "user", workspaceId: temp.ws, principalId: ALICE, access: NO_CALLER };
});

afterEach(async () => {
  await temp.remove();
  delete (globalThis as { skillBodyRan?: unknown }).skillBodyRan;
});

/** Writes a skill with `body`; answers the body it returned, the file, and the body parsed from it. */
async function roundTrip(body: string): Promise<{ returned: string; reread: string; file: string }> {
  const created = await writer.create(target, "s", { description: "d", body });
  const file = await readFile(join(temp.layout.userSkillsDir(ALICE), "s", "SKILL.md"), "utf8");
  return { returned: created.body ?? "", reread: parseSkill(file, "user").body, file };
}

describe("a skill's body is data", () => {
  it("is never evaluated, even when it opens with ---js front matter", async () => {
    const body = "---js\n{ ran: (globalThis.skillBodyRan = true) }\n---\nhi";
    const { returned, reread } = await roundTrip(body);
    expect((globalThis as { skillBodyRan?: unknown }).skillBodyRan).toBeUndefined();
    expect(returned).toBe(body);
    expect(reread).toBe(body);
  });

  it("keeps the indentation its first line opens with; blank lines before it and space after its end go", async () => {
    const { returned, reread } = await roundTrip("\n\n    indented code\n    second\n\nafter\n\n  ");
    expect(returned).toBe("    indented code\n    second\n\nafter");
    expect(reread).toBe("    indented code\n    second\n\nafter");
  });

  it("keeps text between horizontal rules whole", async () => {
    const body = "---\n\nIntro paragraph.\n\n---\n\nSecond section.";
    const { returned, reread } = await roundTrip(body);
    expect(returned).toBe(body);
    expect(reread).toBe(body);
  });

  it("cannot add fields to the front matter", async () => {
    const body = "---\nlicense: injected\n---\nreal body";
    const { reread, file } = await roundTrip(body);
    expect(reread).toBe(body);
    expect(file.startsWith("---\nname: s\ndescription: d\n---\n")).toBe(true);
    expect(file.indexOf("license")).toBeGreaterThan(file.indexOf("---\n", 4));
  });

  it("is stored when it would be invalid YAML as front matter", async () => {
    const body = "---\nx: [\n---\n";
    const { returned } = await roundTrip(body);
    expect(returned).toBe(body.trim());
  });
});

describe("an update keeps the rest of a SKILL.md written elsewhere (adr/0012)", () => {
  const head =
    "---\nname: imported\ndescription: d\nlicense: Apache-2.0\nallowed-tools: Read Grep\n" +
    'metadata:\n  author: example-org\n  version: "1.2"\n---\n';
  const path = () => join(temp.layout.userSkillsDir(ALICE), "imported", "SKILL.md");

  beforeEach(async () => {
    await mkdir(join(temp.layout.userSkillsDir(ALICE), "imported"), { recursive: true });
    await writeFile(path(), `${head}old body\n`);
  });

  it("a new body keeps the front matter byte for byte, and writes no default", async () => {
    await writer.update(target, "imported", { intent: "replace_body", body: "new body" });
    expect(await readFile(path(), "utf8")).toBe(`${head}new body\n`);
  });

  it("a settings patch changes only what it names; every other key stays and no default is added", async () => {
    await writer.update(target, "imported", {
      intent: "patch_metadata",
      description: "Now this.",
      loading: "always",
    });
    const after = await readFile(path(), "utf8");
    const data = (matter({ content: after }) as unknown as { data: Record<string, unknown> }).data;
    expect(data).toEqual({
      name: "imported",
      description: "Now this.",
      license: "Apache-2.0",
      "allowed-tools": "Read Grep",
      metadata: { author: "example-org", version: "1.2", atrium: { loading: "always" } },
    });
    expect(after).not.toContain("provenance");
    expect(after.endsWith("---\nold body\n")).toBe(true);

    await writer.update(target, "imported", { intent: "patch_metadata", tools: ["files__*"] });
    await writer.update(target, "imported", { intent: "patch_metadata", tools: [] });
    const cleared = (
      matter({ content: await readFile(path(), "utf8") }) as unknown as { data: Record<string, unknown> }
    ).data;
    expect(cleared.metadata).toEqual({
      author: "example-org",
      version: "1.2",
      atrium: { loading: "always" },
    });
  });

  it("a settings patch leaves the text of what it does not change: comments, 1.0, a date, a long integer", async () => {
    const text =
      "---\nname: imported\ndescription: d # short\n# kept comment\nmetadata:\n  version: 1.0\n" +
      "  id: 12345678901234567890\ncreated: 2024-01-02\n---\nold body\n";
    await writeFile(path(), text);
    await writer.update(target, "imported", {
      intent: "patch_metadata",
      description: "yes",
      tools: ["files__read"],
    });
    const after = await readFile(path(), "utf8");
    expect(after).toContain("# kept comment\n");
    expect(after).toContain("  version: 1.0\n");
    expect(after).toContain("  id: 12345678901234567890\n");
    expect(after).toContain("created: 2024-01-02\n");
    expect(after.endsWith("---\nold body\n")).toBe(true);
    // Quoted: the YAML 1.1 reader skills are parsed with would take a bare `yes` for true.
    expect(parseSkill(after, "user")).toMatchObject({ description: "yes", tools: ["files__read"] });
  });
});
