import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { CallToolResult, Client } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";

// The skills catalog, the composed instructions and each caller's tool list are kept in memory
// (adr/0051); every answer here must be what the folders on disk say at that moment.
let instance: TestAtrium;
let ws: string;

beforeAll(async () => {
  instance = await startTestAtrium();
  ws = await bootstrapWorkspace(instance, "alice");
});

afterAll(async () => {
  await instance?.stop();
});

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  expect(result.isError ?? false).toBe(false);
  return result;
}

const instructions = async () => (await instance.mcpClient("alice", ws)).getInstructions() ?? "";
const filesDeleteDescription = async () => {
  const { tools } = await (await instance.mcpClient("alice", ws)).listTools();
  return tools.find((t) => t.name === "files__delete")?.description ?? "";
};
const skillFile = (name: string, description: string, extra = "") =>
  `---\nname: ${name}\ndescription: ${description}\n${extra}---\nBody of ${name}.\n`;

describe("kept skills and tool lists stay true", () => {
  it("after a write and a delete through Atrium", async () => {
    const client = await instance.mcpClient("alice", ws);
    expect(await instructions()).not.toContain("kept-one");
    await call(client, "skills__create", {
      name: "kept-one",
      description: "Written through Atrium.",
      body: "Body.",
      tools: ["files__delete"],
    });
    expect(await instructions()).toContain("- kept-one: Written through Atrium.");
    expect(await filesDeleteDescription()).toContain('"kept-one"');
    await call(client, "skills__delete", { name: "kept-one" });
    expect(await instructions()).not.toContain("kept-one");
    expect(await filesDeleteDescription()).not.toContain("kept-one");
  });

  it("after an operator's edits on disk: add, edit in place, remove", async () => {
    const dir = join(instance.root, ws, "skills", "on-disk");
    expect(await instructions()).not.toContain("on-disk");
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "SKILL.md"), skillFile("on-disk", "First description."));
    expect(await instructions()).toContain("- on-disk: First description.");
    await writeFile(
      join(dir, "SKILL.md"),
      skillFile("on-disk", "Second description.", 'metadata:\n  atrium:\n    tools: ["files__delete"]\n'),
    );
    expect(await instructions()).toContain("- on-disk: Second description.");
    expect(await filesDeleteDescription()).toContain('"on-disk"');
    await rm(dir, { recursive: true });
    expect(await instructions()).not.toContain("on-disk");
    expect(await filesDeleteDescription()).not.toContain("on-disk");
  });

  it("after a restart", async () => {
    const client = await instance.mcpClient("alice", ws);
    await call(client, "skills__create", { name: "survives", description: "Still here.", body: "Body." });
    const before = await instructions();
    instance = await instance.restart();
    expect(await instructions()).toBe(before);
    expect(before).toContain("- survives: Still here.");
  });
});
