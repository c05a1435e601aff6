// The one test file that keeps the v1 SDK client (@modelcontextprotocol/sdk, a dev dependency
// for this alone): clients built on it are in the field and must still connect over 2025-11-25.
// Every other test speaks the v2 client (@modelcontextprotocol/client).
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, startTestAtrium, TEST_USER_HEADER, type TestAtrium } from "../helpers/atrium.ts";

let instance: TestAtrium;
let ws: string;
const clients: Client[] = [];

/** A v1 client as `user`, its transport unconnected: `connect` is the test's to run. */
function v1Client(
  user: string,
  workspaceId: string,
): { client: Client; transport: StreamableHTTPClientTransport } {
  const transport = new StreamableHTTPClientTransport(new URL(`${instance.url}/mcp/${workspaceId}`), {
    requestInit: { headers: { [TEST_USER_HEADER]: user } },
  });
  const client = new Client({ name: "atrium-v1-test", version: "0.0.0" }, { capabilities: {} });
  clients.push(client);
  return { client, transport };
}

async function connected(user: string, workspaceId: string): Promise<Client> {
  const { client, transport } = v1Client(user, workspaceId);
  await client.connect(transport);
  return client;
}

function structured<T>(result: CallToolResult): T {
  expect(result.isError ?? false).toBe(false);
  return result.structuredContent as T;
}

beforeAll(async () => {
  instance = await startTestAtrium();
  ws = await bootstrapWorkspace(instance, "alice");
  const skill = join(instance.root, ws, "skills", "careful-deletes");
  await mkdir(skill, { recursive: true });
  await writeFile(
    join(skill, "SKILL.md"),
    "---\nname: careful-deletes\ndescription: Confirm before deleting.\n---\nAsk the person before you delete anything.\n",
  );
});

afterAll(async () => {
  await Promise.allSettled(clients.map((client) => client.close()));
  await instance?.stop();
});

describe("a v1 SDK client over 2025-11-25", () => {
  it("initializes at 2025-11-25 and gets Atrium's server info and instructions", async () => {
    const { client, transport } = v1Client("alice", ws);
    await client.connect(transport);
    expect(transport.protocolVersion).toBe("2025-11-25");
    expect(client.getServerVersion()?.name).toBe("atrium");
    expect(client.getInstructions()).toContain("careful-deletes");
  });

  it("lists the tools", async () => {
    const client = await connected("alice", ws);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(
      expect.arrayContaining(["files__write", "files__info", "skills__read"]),
    );
    expect(tools.find((tool) => tool.name === "files__write")?.inputSchema.required).toEqual(["name"]);
  });

  it("writes a file with files__write and describes it with files__info", async () => {
    const client = await connected("alice", ws);
    const written = structured<{ id: string; size: number }>(
      (await client.callTool({
        name: "files__write",
        arguments: { name: "v1.txt", text: "from v1" },
      })) as CallToolResult,
    );
    expect(written.id).toMatch(/^fl_[0-9a-f]{24}$/);
    const info = structured<{ id: string; name: string; size: number; sha256: string }>(
      (await client.callTool({ name: "files__info", arguments: { id: written.id } })) as CallToolResult,
    );
    expect(info).toMatchObject({ id: written.id, name: "v1.txt", size: 7 });
    expect(info.sha256).toMatch(/^[0-9a-f]{64}$/);
  });

  it("reads a skill as a skill:// resource", async () => {
    const client = await connected("alice", ws);
    const { resources } = await client.listResources();
    expect(resources.map((resource) => resource.uri)).toContain("skill://workspace/careful-deletes");
    const read = await client.readResource({ uri: "skill://workspace/careful-deletes" });
    const [content] = read.contents;
    expect(content && "text" in content ? content.text : "").toBe(
      "Ask the person before you delete anything.",
    );
  });

  // v1 prefixes a JSON-RPC error's message with "MCP error <code>: " itself; a server message
  // that carried the prefix too would show it twice.
  it("an unknown resource shows 'MCP error -32602:' once (SEP-2164)", async () => {
    const client = await connected("alice", ws);
    const failure = await client.readResource({ uri: "skill://user/nope" }).catch((error: Error) => error);
    expect((failure as Error).message).toBe("MCP error -32602: Resource not found: skill://user/nope");
  });

  it("a stranger's connect to someone else's workspace is refused with 404", async () => {
    const { client, transport } = v1Client("mallory", ws);
    await expect(client.connect(transport)).rejects.toMatchObject({ code: 404 });
  });
});
