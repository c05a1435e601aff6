import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { SkillsClient } from "@modelcontextprotocol/client/ext/skills";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium, TEST_USER_HEADER } from "../helpers/atrium.ts";

// Both eras over real HTTP on one workspace URL, with the SDK's v2 client pinned to each.
const ERAS = ["2025-11-25", "2026-07-28"] as const;
type Era = (typeof ERAS)[number];

let instance: TestAtrium;
let ws: string;
const clients: Client[] = [];

async function connect(era: Era, user = "alice"): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${instance.url}/mcp/${ws}`), {
    requestInit: { headers: { [TEST_USER_HEADER]: user } },
  });
  const client = new Client(
    { name: "eras-test", version: "0.0.0" },
    { versionNegotiation: { mode: era === "2026-07-28" ? { pin: era } : "legacy" } },
  );
  await client.connect(transport);
  clients.push(client);
  return client;
}

async function writeWorkspaceSkill(name: string, text: string): Promise<void> {
  const dir = join(instance.root, ws, "skills", name);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, "SKILL.md"), text);
}

const SKILL =
  "---\nname: careful-deletes\ndescription: Confirm before deleting.\n---\nAsk the person before you delete anything.\n";

beforeAll(async () => {
  instance = await startTestAtrium();
  ws = await bootstrapWorkspace(instance, "alice");
  await writeWorkspaceSkill("careful-deletes", SKILL);
});

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await instance?.stop();
});

describe.each(ERAS)("era %s", (era) => {
  it("is the era the client speaks, with this caller's skills as instructions", async () => {
    const client = await connect(era);
    expect(client.getNegotiatedProtocolVersion()).toBe(era);
    expect(client.getInstructions()).toContain("careful-deletes");
  });

  it("lists and calls the workspace's tools", async () => {
    const client = await connect(era);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(["files__write", "files__info"]));
    const written = await client.callTool({
      name: "files__write",
      arguments: { name: `${era}.txt`, text: era },
    });
    expect(written.isError).toBeFalsy();
    const { id } = written.structuredContent as { id: string };
    const info = await client.callTool({ name: "files__info", arguments: { id } });
    expect(info.structuredContent).toMatchObject({ id, name: `${era}.txt`, size: era.length });
  });

  it("serves skills through the Skills Extension and as skill:// resources", async () => {
    const client = await connect(era);
    const skills = new SkillsClient(client);
    const listing = await skills.list();
    const entry = listing.skills.find((skill) => skill.frontmatter.name === "careful-deletes");
    expect(entry?.uri).toBe("skill://workspace/careful-deletes/SKILL.md");
    const read = await client.readResource({ uri: "skill://workspace/careful-deletes" });
    expect(read.contents[0]).toMatchObject({ text: "Ask the person before you delete anything." });
  });

  it("completes the skill resource template's path from the caller's skills", async () => {
    const client = await connect(era);
    const { completion } = await client.complete({
      ref: { type: "ref/resource", uri: "skill://{+path}" },
      argument: { name: "path", value: "workspace/care" },
    });
    expect(completion.values).toEqual(["workspace/careful-deletes"]);
    const none = await client.complete({
      ref: { type: "ref/prompt", name: "anything" },
      argument: { name: "x", value: "" },
    });
    expect(none.completion.values).toEqual([]);
  });
});
