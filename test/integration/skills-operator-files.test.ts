import { mkdir, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { CallToolResult } from "@modelcontextprotocol/client";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";

// What an operator leaves in a skills folder is theirs to get wrong: whatever it is, it costs only
// itself — listed as a problem, never served — and never another skill, workspace or request.

interface Listing {
  skills: Array<{ name: string; scope: string }>;
  problems: Array<{ scope: string; name: string; message: string }>;
}

let instance: TestAtrium;
let ws: string;
let org: string;

beforeAll(async () => {
  instance = await startTestAtrium({ skills: { orgDir: "org-skills" } });
  ws = await bootstrapWorkspace(instance, "alice");
  org = join(instance.dir, "org-skills");
  await mkdir(org, { recursive: true });
});

afterEach(async () => {
  for (const entry of ["good", "looped", "release-notes"])
    await rm(join(org, entry), { recursive: true, force: true });
});

afterAll(async () => {
  await instance?.stop();
});

const skillText = (name: string, body = `Body of ${name}.`) =>
  `---\nname: ${name}\ndescription: About ${name}.\nmetadata:\n  atrium:\n    loading: always\n---\n${body}\n`;

async function putOrgSkill(name: string, text: string): Promise<void> {
  await mkdir(join(org, name), { recursive: true });
  await writeFile(join(org, name, "SKILL.md"), text);
}

async function listing(): Promise<Listing> {
  const response = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/skills`);
  expect(response.status).toBe(200);
  return (await response.json()) as Listing;
}

describe("an operator's unreadable skill", () => {
  it("a SKILL.md that is a symlink loop is a problem; initialize and the other skills go on", async () => {
    await putOrgSkill("good", skillText("good", "GOOD-BODY"));
    await mkdir(join(org, "looped"));
    await symlink("SKILL.md", join(org, "looped", "SKILL.md"));
    const listed = await listing();
    expect(listed.skills.filter((s) => s.scope === "org").map((s) => s.name)).toEqual(["good"]);
    expect(listed.problems).toEqual([
      { scope: "org", name: "looped", message: "no readable SKILL.md in the folder" },
    ]);
    const client = await instance.mcpClient("alice", ws);
    expect(client.getInstructions()).toContain("GOOD-BODY");
    const files = (await client.callTool({ name: "files__list", arguments: {} })) as CallToolResult;
    expect(files.isError ?? false).toBe(false);
  });
});

describe("an operator's skill folder that is a symlink", () => {
  it("is a problem, and what it points to is never served", async () => {
    const elsewhere = join(instance.dir, "team-skills", "release-notes");
    await mkdir(elsewhere, { recursive: true });
    await writeFile(join(elsewhere, "SKILL.md"), skillText("release-notes", "LINKED-BODY"));
    await symlink(elsewhere, join(org, "release-notes"));
    const listed = await listing();
    expect(listed.skills.map((s) => s.name)).not.toContain("release-notes");
    expect(listed.problems).toEqual([
      { scope: "org", name: "release-notes", message: expect.stringMatching(/^a symlink, not a folder: /) },
    ]);
    const client = await instance.mcpClient("alice", ws);
    expect(client.getInstructions()).not.toContain("LINKED-BODY");
  });
});
