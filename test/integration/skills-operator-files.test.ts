import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
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
      { scope: "org", name: "looped", message: expect.stringMatching(/^SKILL\.md is a symlink, /) },
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

describe("an operator's SKILL.md that is a symlink (adr/0139: never followed)", () => {
  const LINKED = "SKILL.md is a symlink, which Atrium does not follow: put the file itself in its place";

  it("to a file outside the data root is a problem saying what to do; its text is never served, read or edited", async () => {
    const outside = await mkdtemp(join(tmpdir(), "atrium-outside-"));
    const target = join(outside, "notes.md");
    const workspaceSkills = join(instance.root, ws, "skills");
    try {
      await writeFile(target, skillText("linked", "OUTSIDE-BODY"));
      await mkdir(join(workspaceSkills, "linked"), { recursive: true });
      await symlink(target, join(workspaceSkills, "linked", "SKILL.md"));
      await mkdir(join(org, "looped"));
      await symlink(target, join(org, "looped", "SKILL.md"));

      const listed = await listing();
      expect(listed.skills.map((s) => s.name)).not.toContain("linked");
      expect(listed.problems).toEqual(
        expect.arrayContaining([
          { scope: "workspace", name: "linked", message: LINKED },
          { scope: "org", name: "looped", message: LINKED },
        ]),
      );
      const client = await instance.mcpClient("alice", ws);
      expect(client.getInstructions()).not.toContain("OUTSIDE-BODY");
      const read = (await client.callTool({
        name: "skills__read",
        arguments: { name: "linked" },
      })) as CallToolResult;
      expect(read.isError).toBe(true);
      expect(JSON.stringify(read.content)).not.toContain("OUTSIDE-BODY");

      const update = await instance.rest("alice", "PATCH", `/v1/workspaces/${ws}/skills/linked`, {
        intent: "patch_metadata",
        loading: "dynamic",
      });
      expect(update.status).toBe(409);
      expect(await update.json()).toMatchObject({
        error: {
          code: "skill_unreadable",
          message: expect.stringMatching(/SKILL\.md is a symlink.*Delete the skill/),
        },
      });
      // A delete removes the link, never what it points to.
      expect((await instance.rest("alice", "DELETE", `/v1/workspaces/${ws}/skills/linked`)).status).toBe(204);
      expect(await readFile(target, "utf8")).toBe(skillText("linked", "OUTSIDE-BODY"));
    } finally {
      await rm(join(workspaceSkills, "linked"), { recursive: true, force: true });
      await rm(outside, { recursive: true, force: true });
    }
  });

  it("a saved version or its metadata linked to a file outside the root is refused, never read", async () => {
    const outside = await mkdtemp(join(tmpdir(), "atrium-outside-"));
    const history = join(instance.root, ws, "skills", ".history", "versioned");
    const base = `/v1/workspaces/${ws}/skills/versioned`;
    try {
      await writeFile(join(outside, "old.md"), skillText("versioned", "OUTSIDE-BODY"));
      await writeFile(join(outside, "old.json"), JSON.stringify({ version: 1, savedAt: "OUTSIDE-META" }));
      const created = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/skills`, {
        name: "versioned",
        description: "d",
        body: "b",
      });
      expect(created.status).toBe(201);
      await rm(join(history, "1.md"));
      await symlink(join(outside, "old.md"), join(history, "1.md"));
      const version = await instance.rest("alice", "GET", `${base}/history/1`);
      expect(version.status).toBe(409);
      expect(await version.text()).not.toContain("OUTSIDE-BODY");
      await rm(join(history, "1.json"));
      await symlink(join(outside, "old.json"), join(history, "1.json"));
      const versions = await instance.rest("alice", "GET", `${base}/history`);
      expect(versions.status).toBe(409);
      expect(await versions.text()).not.toContain("OUTSIDE-META");
    } finally {
      await instance.rest("alice", "DELETE", base);
      await rm(outside, { recursive: true, force: true });
    }
  });

  it("a skill folder or versions folder linked outside the root is never read or written through by a write or a history read", async () => {
    const outside = await mkdtemp(join(tmpdir(), "atrium-outside-"));
    const skills = join(instance.root, ws, "skills");
    const elsewhere = join(outside, "folder");
    const original = skillText("folded", "OUTSIDE-BODY");
    try {
      await mkdir(elsewhere);
      await writeFile(join(elsewhere, "SKILL.md"), original);
      await symlink(elsewhere, join(skills, "folded"));
      const update = await instance.rest("alice", "PATCH", `/v1/workspaces/${ws}/skills/folded`, {
        intent: "patch_metadata",
        description: "Changed.",
      });
      expect(update.status).toBe(409);
      expect(await update.json()).toMatchObject({
        error: {
          code: "skill_unreadable",
          message: expect.stringMatching(/its folder folded is a symlink.*Delete the skill/),
        },
      });
      const created = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/skills`, {
        name: "folded",
        description: "d",
        body: "b",
      });
      expect(created.status).toBe(409);
      expect(((await created.json()) as { error: { code: string } }).error.code).toBe("skill_unreadable");
      expect((await instance.rest("alice", "DELETE", `/v1/workspaces/${ws}/skills/folded`)).status).toBe(204);
      expect(await readFile(join(elsewhere, "SKILL.md"), "utf8")).toBe(original);

      // A versions folder linked elsewhere: neither listed, read, nor written into by a save.
      const base = `/v1/workspaces/${ws}/skills/kept`;
      const made = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/skills`, {
        name: "kept",
        description: "d",
        body: "b",
      });
      expect(made.status).toBe(201);
      const versions = join(skills, ".history", "kept");
      await rm(versions, { recursive: true });
      await mkdir(join(outside, "versions"));
      await writeFile(join(outside, "versions", "1.md"), original);
      await writeFile(
        join(outside, "versions", "1.json"),
        JSON.stringify({ version: 1, savedAt: "OUTSIDE-META" }),
      );
      await symlink(join(outside, "versions"), versions);
      for (const path of ["history", "history/1"]) {
        const read = await instance.rest("alice", "GET", `${base}/${path}`);
        expect(read.status, path).toBe(409);
        expect(await read.text()).toMatch(/its folder \.history\/kept is a symlink/);
      }
      const saved = await instance.rest("alice", "PATCH", base, { intent: "replace_body", body: "New." });
      expect(saved.status).toBe(409);
      expect(await readFile(join(outside, "versions", "1.md"), "utf8")).toBe(original);
      expect((await instance.rest("alice", "DELETE", base)).status).toBe(204);
      expect(await readFile(join(outside, "versions", "1.md"), "utf8")).toBe(original);
    } finally {
      await rm(join(skills, "folded"), { force: true });
      await rm(outside, { recursive: true, force: true });
    }
  });
});
