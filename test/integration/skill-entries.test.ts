import { SkillsClient } from "@modelcontextprotocol/client/ext/skills";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PlatformApp } from "../../src/platform/app.ts";
import { AppTools } from "../../src/platform/app-tools.ts";
import { PLATFORM_APPS } from "../../src/platform/index.ts";
import { digestOf, type SkillPackage } from "../../src/sources/guidance.ts";
import { bootstrapWorkspace, capturingLogger, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { MCP_ERAS } from "../helpers/mcp-eras.ts";

// The Skills Extension refuses an entry that breaks its rules. One such entry must cost only
// itself: skills/list leaves it out and the log says why, and every other skill is still listed.
// Atrium's own skills cannot make one (their names, descriptions and file URIs follow the rules),
// so an app here publishes a package whose name is not its folder's.

const MISNAMED_FILE = new TextEncoder().encode('---\nname: "odd"\ndescription: "x"\n---\n');
const MISNAMED: SkillPackage<Uint8Array> = {
  path: "server/odd-one",
  name: "odd",
  description: "Named otherwise than its folder.",
  files: { "SKILL.md": MISNAMED_FILE },
};

const misnamedApp: PlatformApp = {
  name: "misnamed",
  start() {
    return {
      tools: new AppTools("misnamed"),
      guidance: {
        packages: async () => [{ ...MISNAMED, files: { "SKILL.md": digestOf(MISNAMED_FILE) } }],
        packageFiles: async (_ws, _who, path) => (path === MISNAMED.path ? MISNAMED : undefined),
      },
    };
  },
};

const captured = capturingLogger("warn");
let instance: TestAtrium;
let ws: string;

beforeAll(async () => {
  instance = await startTestAtrium({ apps: [...PLATFORM_APPS, misnamedApp], log: captured.log });
  ws = await bootstrapWorkspace(instance, "alice");
});

afterAll(async () => {
  await instance?.stop();
});

describe.each(MCP_ERAS)("an entry the Skills Extension refuses (%s)", (era) => {
  it("is left out of skills/list and logged at warn; the other skills are listed", async () => {
    captured.lines.length = 0;
    const skills = new SkillsClient(await instance.mcpClient("alice", ws, { era }));
    const { skills: entries } = await skills.list();
    expect(entries.map((entry) => entry.uri)).toEqual(["skill://platform/using-atrium-files/SKILL.md"]);
    const warning = captured.lines.find((line) => line.msg === "skill entry refused");
    expect(warning).toMatchObject({ level: 40, skill: "skill://server/odd-one/SKILL.md" });
    expect(warning?.problem).toContain('must match the last path segment "odd-one"');
  });

  it("is not served by skills/get either, which answers as for a skill nobody has", async () => {
    const skills = new SkillsClient(await instance.mcpClient("alice", ws, { era }));
    await expect(skills.get("skill://server/odd-one/SKILL.md")).rejects.toMatchObject({
      code: -32602,
      message: "No skill is served at skill://server/odd-one/SKILL.md",
    });
    const { skill } = await skills.get("skill://platform/using-atrium-files/SKILL.md");
    expect(skill.frontmatter.name).toBe("using-atrium-files");
  });
});
