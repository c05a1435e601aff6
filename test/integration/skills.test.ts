import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { CallToolResult, Client } from "@modelcontextprotocol/client";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { skillsConfig } from "../../src/platform/skills/config.ts";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";

interface ListedSkill {
  name: string;
  description: string;
  scope: string;
  provenance: string;
  channel: string;
  tools: string[];
}
interface Listing {
  skills: ListedSkill[];
  problems: Array<{ scope: string; name: string; message: string }>;
}

const PLATFORM_SKILL = "using-atrium-files";

let instance: TestAtrium;
let wsA: string;
let wsB: string;
/** Skill folders a test wrote; removed after each test so tests do not see each other's skills. */
const written: string[] = [];

beforeAll(async () => {
  instance = await startTestAtrium({ skills: { orgDir: "org-skills" } });
  wsA = await bootstrapWorkspace(instance, "alice");
  const created = await instance.rest("alice", "POST", "/v1/workspaces", { name: "Second" });
  expect(created.status).toBe(201);
  wsB = ((await created.json()) as { id: string }).id;
});

afterEach(async () => {
  await Promise.all(written.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

afterAll(async () => {
  await instance?.stop();
});

const folders = {
  user: () => join(instance.root, "_instance", "users", testPrincipal("alice").id, "skills"),
  workspace: (ws = wsA) => join(instance.root, ws, "skills"),
  org: () => {
    const dir = skillsConfig.resolve(instance.config.sections.skills, instance.config).orgDir;
    if (dir === undefined) throw new Error("the test instance has no org skills folder");
    return dir;
  },
};

function skillText(
  name: string,
  { description = `About ${name}.`, body = `Body of ${name}.`, atrium = [] as string[] } = {},
): string {
  const metadata = atrium.length > 0 ? ["metadata:", "  atrium:", ...atrium.map((l) => `    ${l}`)] : [];
  return ["---", `name: ${name}`, `description: ${description}`, ...metadata, "---", body, ""].join("\n");
}

async function putSkill(scopeDir: string, name: string, text: string): Promise<string> {
  const dir = join(scopeDir, name);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, "SKILL.md"), text);
  written.push(dir);
  return dir;
}

/** A fresh connection's `initialize` instructions: each connect runs its own initialize. */
async function instructionsFor(ws: string): Promise<string> {
  const client = await instance.mcpClient("alice", ws);
  const instructions = client.getInstructions();
  if (instructions === undefined) throw new Error("initialize returned no instructions");
  return instructions;
}

async function call(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

async function listSkills(ws = wsA): Promise<Listing> {
  const result = await call(await instance.mcpClient("alice", ws), "skills__list");
  expect(result.isError ?? false).toBe(false);
  return result.structuredContent as unknown as Listing;
}

function text(result: CallToolResult): string {
  const first = result.content[0];
  return first?.type === "text" ? first.text : "";
}

describe("skills over /mcp/ws_…", () => {
  it("an always workspace skill's body is in the instructions; a dynamic one is only catalogued", async () => {
    await putSkill(
      folders.workspace(),
      "house-style",
      skillText("house-style", { body: "PINNED-BODY: write in plain English.", atrium: ["loading: always"] }),
    );
    await putSkill(folders.workspace(), "on-demand", skillText("on-demand", { body: "ON-DEMAND-BODY" }));
    const instructions = await instructionsFor(wsA);
    expect(instructions).toContain("## Skill: house-style\n\nPINNED-BODY: write in plain English.");
    expect(instructions).toContain("- on-demand: About on-demand.");
    expect(instructions).not.toContain("ON-DEMAND-BODY");
    expect(instructions).not.toContain("- house-style:");
  });

  it("the platform skill is listed as vendored and is in the catalog", async () => {
    const { skills } = await listSkills();
    expect(skills.find((s) => s.name === PLATFORM_SKILL)).toMatchObject({
      scope: "platform",
      provenance: "vendored",
      channel: "dynamic",
      tools: ["files__*"],
    });
    expect(await instructionsFor(wsA)).toMatch(/^- using-atrium-files: How to store/m);
  });

  it("reading a skill leaves the instructions' bytes unchanged; a new skill on disk changes them", async () => {
    const client = await instance.mcpClient("alice", wsA);
    const before = client.getInstructions() ?? "";
    const read = await call(client, "skills__read", { name: PLATFORM_SKILL });
    expect(read.isError ?? false).toBe(false);
    expect(text(read)).toContain("# Using Atrium files");
    const afterRead = await instructionsFor(wsA);
    expect(Buffer.from(afterRead).equals(Buffer.from(before))).toBe(true);

    await putSkill(
      folders.workspace(),
      "fresh-skill",
      skillText("fresh-skill", { description: "Just dropped in." }),
    );
    const afterWrite = await instructionsFor(wsA);
    expect(afterWrite).not.toBe(before);
    expect(afterWrite).toContain("- fresh-skill: Just dropped in.");
  });

  it("a skill in one workspace is invisible in another", async () => {
    await putSkill(folders.workspace(wsA), "a-only", skillText("a-only", { body: "A-ONLY-BODY" }));
    await putSkill(
      folders.workspace(wsA),
      "a-pinned",
      skillText("a-pinned", { body: "A-PINNED-BODY", atrium: ["loading: always"] }),
    );
    // Seen where it lives, so the absence below is the wall and not a missing file.
    expect((await listSkills(wsA)).skills.map((s) => s.name)).toEqual(
      expect.arrayContaining(["a-only", "a-pinned"]),
    );
    expect(await instructionsFor(wsA)).toContain("A-PINNED-BODY");

    const inB = await instructionsFor(wsB);
    expect(inB).not.toContain("a-only");
    expect(inB).not.toContain("A-PINNED-BODY");
    expect((await listSkills(wsB)).skills.map((s) => s.name)).toEqual([PLATFORM_SKILL]);
    const clientB = await instance.mcpClient("alice", wsB);
    for (const name of ["a-only", "a-pinned"]) {
      const read = await call(clientB, "skills__read", { name });
      expect(read.isError, name).toBe(true);
      expect(text(read)).not.toContain("BODY");
    }
  });

  it("a malformed SKILL.md is reported as a problem and skipped; the others still list", async () => {
    await putSkill(folders.workspace(), "broken", "---\nname: broken\n---\nNo description.\n");
    await putSkill(folders.workspace(), "healthy", skillText("healthy"));
    const { skills, problems } = await listSkills();
    expect(skills.map((s) => s.name)).toEqual(["healthy", PLATFORM_SKILL]);
    expect(problems).toEqual([
      { scope: "workspace", name: "broken", message: expect.stringMatching(/^description: /) },
    ]);
    const instructions = await instructionsFor(wsA);
    expect(instructions).toContain("- healthy:");
    expect(instructions).not.toContain("broken");
  });

  it("a workspace skill whose SKILL.md is broken can be deleted by an admin, and its name used again", async () => {
    await putSkill(
      folders.workspace(),
      "broken-yaml",
      "---\nname: broken-yaml\ndescription: [unclosed\n---\nbody\n",
    );
    const client = await instance.mcpClient("alice", wsA);
    const deleted = await call(client, "skills__delete", { name: "broken-yaml", scope: "workspace" });
    expect(deleted.isError ?? false, text(deleted)).toBe(false);
    expect((await listSkills()).problems).toEqual([]);
    const created = await call(client, "skills__create", {
      name: "broken-yaml",
      scope: "workspace",
      description: "Fixed.",
      body: "Whole again.",
    });
    expect(created.isError ?? false, text(created)).toBe(false);
    await call(client, "skills__delete", { name: "broken-yaml", scope: "workspace" });
  });

  it("a workspace file claiming vendored provenance is a problem, not a vendored skill", async () => {
    await putSkill(folders.workspace(), "forged", skillText("forged", { atrium: ["provenance: vendored"] }));
    const { skills, problems } = await listSkills();
    expect(skills.map((s) => s.name)).not.toContain("forged");
    expect(skills.filter((s) => s.provenance === "vendored").map((s) => s.scope)).toEqual(["platform"]);
    expect(problems).toEqual([
      {
        scope: "workspace",
        name: "forged",
        message: expect.stringMatching(/^metadata\.atrium\.provenance: /),
      },
    ]);
    const read = await call(await instance.mcpClient("alice", wsA), "skills__read", { name: "forged" });
    expect(read.isError).toBe(true);
  });

  it("user beats workspace beats org beats platform for one name, falling back as each is removed", async () => {
    const dirs = {
      user: await putSkill(folders.user(), PLATFORM_SKILL, skillText(PLATFORM_SKILL, { body: "USER-COPY" })),
      workspace: await putSkill(
        folders.workspace(),
        PLATFORM_SKILL,
        skillText(PLATFORM_SKILL, { body: "WORKSPACE-COPY" }),
      ),
      org: await putSkill(folders.org(), PLATFORM_SKILL, skillText(PLATFORM_SKILL, { body: "ORG-COPY" })),
    };
    const client = await instance.mcpClient("alice", wsA);
    const resolved = async () => {
      const listed = (await listSkills()).skills.filter((s) => s.name === PLATFORM_SKILL);
      expect(listed).toHaveLength(1);
      const read = await call(client, "skills__read", { name: PLATFORM_SKILL });
      return { scope: listed[0]?.scope, provenance: listed[0]?.provenance, body: text(read) };
    };

    expect(await resolved()).toEqual({ scope: "user", provenance: "admin", body: "USER-COPY" });
    await rm(dirs.user, { recursive: true });
    expect(await resolved()).toEqual({ scope: "workspace", provenance: "admin", body: "WORKSPACE-COPY" });
    await rm(dirs.workspace, { recursive: true });
    expect(await resolved()).toEqual({ scope: "org", provenance: "admin", body: "ORG-COPY" });
    await rm(dirs.org, { recursive: true });
    const platform = await resolved();
    expect(platform).toMatchObject({ scope: "platform", provenance: "vendored" });
    expect(platform.body).toContain("# Using Atrium files");
  });

  it("a user-scope skill follows its owner, not the workspace", async () => {
    await putSkill(folders.user(), "my-habits", skillText("my-habits"));
    expect((await listSkills(wsA)).skills.map((s) => s.name)).toContain("my-habits");
    expect((await listSkills(wsB)).skills.map((s) => s.name)).toContain("my-habits");
    const bobWs = await bootstrapWorkspace(instance, "bob");
    const bob = await instance.mcpClient("bob", bobWs);
    const listed = (await call(bob, "skills__list")).structuredContent as unknown as Listing;
    expect(listed.skills.map((s) => s.name)).toEqual([PLATFORM_SKILL]);
  });

  it("reading an unknown skill is an isError result naming it", async () => {
    const read = await call(await instance.mcpClient("alice", wsA), "skills__read", {
      name: "no-such-skill",
    });
    expect(read.isError).toBe(true);
    expect(text(read)).toContain('"no-such-skill"');
  });
});

// The skills catalog, the composed instructions and each caller's tool list are kept in memory
// (adr/0051); every answer here must be what the folders on disk say at that moment.
describe("kept skills and tool lists stay true", () => {
  const ok = async (client: Client, name: string, args: Record<string, unknown>) => {
    const result = await call(client, name, args);
    expect(result.isError ?? false).toBe(false);
  };
  const deleteNote = async () => {
    const { tools } = await (await instance.mcpClient("alice", wsA)).listTools();
    return tools.find((t) => t.name === "files__delete")?.description ?? "";
  };

  it("after a write and a delete through Atrium", async () => {
    const client = await instance.mcpClient("alice", wsA);
    expect(await instructionsFor(wsA)).not.toContain("kept-one");
    const created = { name: "kept-one", description: "Written through Atrium.", body: "Body." };
    await ok(client, "skills__create", { ...created, tools: ["files__delete"] });
    expect(await instructionsFor(wsA)).toContain("- kept-one: Written through Atrium.");
    expect(await deleteNote()).toContain('"kept-one"');
    await ok(client, "skills__delete", { name: "kept-one" });
    expect(await instructionsFor(wsA)).not.toContain("kept-one");
    expect(await deleteNote()).not.toContain("kept-one");
  });

  it("after an operator's edits on disk: add, edit in place, remove", async () => {
    expect(await instructionsFor(wsA)).not.toContain("on-disk");
    const dir = await putSkill(
      folders.workspace(),
      "on-disk",
      skillText("on-disk", { description: "First." }),
    );
    expect(await instructionsFor(wsA)).toContain("- on-disk: First.");
    const bound = skillText("on-disk", { description: "Second.", atrium: ['tools: ["files__delete"]'] });
    await writeFile(join(dir, "SKILL.md"), bound);
    expect(await instructionsFor(wsA)).toContain("- on-disk: Second.");
    expect(await deleteNote()).toContain('"on-disk"');
    await rm(dir, { recursive: true });
    expect(await instructionsFor(wsA)).not.toContain("on-disk");
    expect(await deleteNote()).not.toContain("on-disk");
  });

  it("after a restart", async () => {
    await putSkill(folders.workspace(), "survives", skillText("survives", { description: "Still here." }));
    const before = await instructionsFor(wsA);
    expect(before).toContain("- survives: Still here.");
    instance = await instance.restart();
    expect(await instructionsFor(wsA)).toBe(before);
  });
});
