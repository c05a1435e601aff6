import { mkdir, readFile, rm, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/client";
import { SkillsClient } from "@modelcontextprotocol/client/ext/skills";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { makeFifo } from "../helpers/fifo.ts";

let instance: TestAtrium;
let ws: string;
let client: Client;

async function writeWorkspaceSkill(name: string, text: string): Promise<void> {
  const dir = join(instance.root, ws, "skills", name);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, "SKILL.md"), text);
}

beforeAll(async () => {
  instance = await startTestAtrium();
  ws = await bootstrapWorkspace(instance, "alice");
  client = await instance.mcpClient("alice", ws);
  await writeWorkspaceSkill(
    "careful-deletes",
    "---\nname: careful-deletes\ndescription: Confirm before deleting.\nmetadata:\n  atrium:\n    tools: [files__delete]\n---\nAsk the person before you delete anything.\n",
  );
});

afterAll(async () => {
  await instance?.stop();
});

describe("skills on the MCP surface", () => {
  it("a tool bound to a skill points to it in its description; unbound tools do not", async () => {
    const { tools } = await client.listTools();
    const remove = tools.find((t) => t.name === "files__delete");
    const write = tools.find((t) => t.name === "files__write");
    expect(remove?.description).toContain('"careful-deletes"');
    expect(remove?.description).toContain("skills__read");
    // The platform skill binds files__*, so every files tool names it; only delete names both.
    expect(write?.description).toContain('"using-atrium-files"');
    expect(write?.description).not.toContain("careful-deletes");
    const rest = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/tools`);
    const restTools = ((await rest.json()) as { tools: typeof tools }).tools;
    expect(restTools.find((t) => t.name === "files__delete")?.description).toBe(remove?.description);
  });

  it("lists skills as skill:// resources and reads one", async () => {
    const { resources } = await client.listResources();
    const uris = resources.map((r) => r.uri).sort();
    expect(uris).toEqual(["skill://platform/using-atrium-files", "skill://workspace/careful-deletes"]);
    const read = await client.readResource({ uri: "skill://workspace/careful-deletes" });
    const [content] = read.contents;
    expect(content && "text" in content ? content.text : "").toBe(
      "Ask the person before you delete anything.",
    );
  });

  it("a bundled file is a skill:// resource; a path the skill did not bundle is not", async () => {
    const dir = join(instance.root, ws, "skills", "careful-deletes");
    await mkdir(join(dir, "examples"), { recursive: true });
    await writeFile(join(dir, "examples", "confirm.txt"), "Are you sure?");
    await writeFile(join(dir, "logo.bin"), Buffer.from([0xff, 0x00, 0xfe]));
    await writeFile(join(instance.root, ws, "workspace-secret.txt"), "not a skill file");
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toEqual(
      expect.arrayContaining([
        "skill://workspace/careful-deletes/examples/confirm.txt",
        "skill://workspace/careful-deletes/logo.bin",
      ]),
    );
    const text = await client.readResource({ uri: "skill://workspace/careful-deletes/examples/confirm.txt" });
    expect(text.contents[0]).toMatchObject({ text: "Are you sure?" });
    const binary = await client.readResource({ uri: "skill://workspace/careful-deletes/logo.bin" });
    expect(binary.contents[0]).toMatchObject({ blob: Buffer.from([0xff, 0x00, 0xfe]).toString("base64") });
    for (const uri of [
      "skill://workspace/careful-deletes/../../workspace-secret.txt",
      "skill://workspace/careful-deletes/%2e%2e/%2e%2e/workspace-secret.txt",
      "skill://workspace/careful-deletes/examples/../../SKILL.md",
    ]) {
      await expect(client.readResource({ uri }), uri).rejects.toThrow(/not found/i);
    }
    // The Skills Extension serves each skill's SKILL.md with the frontmatter its entry states — the
    // name and description — and the body; Atrium's own metadata.atrium block stays on disk, so a
    // client that verifies the file against the entry (the SDK's SkillsClient) accepts it.
    const skillFile = await client.readResource({ uri: "skill://workspace/careful-deletes/SKILL.md" });
    const served = (skillFile.contents[0] as { text: string }).text;
    expect(served).toMatch(/^---\nname: "careful-deletes"\ndescription: "Confirm before deleting."\n---\n/);
    expect(served).toContain("Ask the person before you delete anything.");
    expect(served).not.toContain("atrium:");
    expect(await readFile(join(dir, "SKILL.md"), "utf8")).toContain("atrium:");
    await rm(join(dir, "examples"), { recursive: true });
    await rm(join(dir, "logo.bin"));
  });

  it("a bundled file whose name URIs reserve is listed percent-encoded and read back by either spelling", async () => {
    const dir = join(instance.root, ws, "skills", "careful-deletes");
    // A `?` or `#` unencoded would make a query or a fragment (the SDK refused the whole entry,
    // and with it every caller's skills/list); a space or a `%` would be spelled otherwise by a
    // URL parser than the listing (resources/read answered "not found").
    const names = ["faq?.md", "my notes.md", "Q&A #1.md", "100%.md"];
    for (const name of names) await writeFile(join(dir, name), `about ${name}`);
    const encoded = names.map((name) => `skill://workspace/careful-deletes/${encodeURIComponent(name)}`);
    const skills = new SkillsClient(client);
    const { skills: entries } = await skills.list();
    expect(entries.map((entry) => entry.frontmatter.name).sort()).toEqual([
      "careful-deletes",
      "using-atrium-files",
    ]);
    const entry = entries.find((e) => e.frontmatter.name === "careful-deletes");
    if (!entry || entry.resources === "dynamic")
      throw new Error("careful-deletes is not listed with its files");
    expect(entry.resources.map((r) => r.uri)).toEqual(expect.arrayContaining(encoded));
    for (const [i, uri] of encoded.entries()) {
      // SkillsClient checks the size and the digest against the entry.
      const file = await skills.read(entry, uri);
      expect(file.text).toBe(`about ${names[i]}`);
    }
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toEqual(expect.arrayContaining(encoded));
    const spaced = await client.readResource({ uri: "skill://workspace/careful-deletes/my notes.md" });
    expect(spaced.contents[0]).toMatchObject({ text: "about my notes.md" });
    // An unencoded `?` is a query: it names no file.
    await expect(client.readResource({ uri: "skill://workspace/careful-deletes/faq?.md" })).rejects.toThrow(
      /not found/i,
    );
    for (const name of names) await rm(join(dir, name));
  });

  it("a skill whose bundled file is too large, or whose SKILL.md is a FIFO, is left out alone", async () => {
    await writeWorkspaceSkill(
      "huge-data",
      "---\nname: huge-data\ndescription: Ships a huge file.\n---\nBody.\n",
    );
    const huge = join(instance.root, ws, "skills", "huge-data", "data.bin");
    // Sparse: a gigabyte on paper, nothing on disk. Read whole on every list, it failed the list.
    await writeFile(huge, "");
    await truncate(huge, 1024 ** 3);
    // A FIFO read would block a thread of the pool for good, and with it every request after.
    const piped = join(instance.root, ws, "skills", "piped");
    await mkdir(piped, { recursive: true });
    makeFifo(join(piped, "SKILL.md"));
    try {
      const { skills: entries } = await new SkillsClient(client).list();
      expect(entries.map((entry) => entry.frontmatter.name).sort()).toEqual([
        "careful-deletes",
        "using-atrium-files",
      ]);
      await expect(client.readResource({ uri: "skill://workspace/huge-data/data.bin" })).rejects.toThrow(
        /is not served: it holds 1073741824 bytes, over the 8388608 a bundled file may/,
      );
      const listed = await client.callTool({ name: "skills__list", arguments: {} });
      expect(JSON.stringify(listed.structuredContent)).toContain("SKILL.md is a FIFO, not a regular file");
    } finally {
      await rm(join(instance.root, ws, "skills", "huge-data"), { recursive: true });
      await rm(piped, { recursive: true });
    }
  });

  it("an unknown skill:// resource is a not-found error", async () => {
    await expect(client.readResource({ uri: "skill://workspace/nope" })).rejects.toThrow(/not found/i);
  });

  it("a removed skill stops binding and stops being a resource", async () => {
    await rm(join(instance.root, ws, "skills", "careful-deletes"), { recursive: true });
    const { tools } = await client.listTools();
    expect(tools.find((t) => t.name === "files__delete")?.description).not.toContain("careful-deletes");
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toEqual(["skill://platform/using-atrium-files"]);
  });
});
