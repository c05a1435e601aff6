import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as z from "zod";
import type { ConfigSection } from "../../src/instance/schema.ts";
import type { PlatformApp } from "../../src/platform/app.ts";
import { AppTools } from "../../src/platform/app-tools.ts";
import { PLATFORM_APPS } from "../../src/platform/index.ts";
import { platformInput } from "../../src/platform/platform-tool.ts";
import { makeFolderIfMissing } from "../../src/storage/folders.ts";
import type { PartitionPaths } from "../../src/storage/paths.ts";
import type { AppEnv } from "../../src/web/app-env.ts";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { MCP_ERAS } from "../helpers/mcp-eras.ts";

// "Adding a platform app is a folder and one line": an app defined here, with no other edit to
// Atrium, declares its instance.json section and its folder, builds its store from the kernel
// context, is listed and called over MCP in both eras and answers its REST route behind the gate.

interface GreeterSettings {
  salutation: string;
}

const greeterConfig: ConfigSection<GreeterSettings> = {
  schema: {
    type: "object",
    additionalProperties: false,
    properties: { salutation: { type: "string", minLength: 1 } },
  },
  resolve: (section) => ({
    salutation: (section as { salutation?: string } | undefined)?.salutation ?? "hello",
  }),
};

/** The app's own store: one file per greeted name, in the caller's partition of the app's folder. */
class Greetings {
  constructor(private readonly storage: PartitionPaths) {}

  async record(workspaceId: string, ownerId: string, name: string): Promise<void> {
    await makeFolderIfMissing(this.storage.dir(workspaceId));
    await makeFolderIfMissing(this.storage.ownerDir(workspaceId, ownerId));
    await writeFile(join(this.storage.ownerDir(workspaceId, ownerId), encodeURIComponent(name)), name);
  }

  async names(workspaceId: string, ownerId: string): Promise<string[]> {
    const dir = this.storage.ownerDir(workspaceId, ownerId);
    const files = await readdir(dir).catch(() => []);
    return Promise.all(files.sort().map((file) => readFile(join(dir, file), "utf8")));
  }
}

const greeterApp: PlatformApp<GreeterSettings> = {
  name: "greeter",
  config: greeterConfig,
  start({ settings, storage }) {
    const greetings = new Greetings(storage);
    const routes = new Hono<AppEnv>();
    routes.get("/greetings", async (c) =>
      c.json({ greeted: await greetings.names(c.get("admission").workspace.id, c.get("principal").id) }),
    );
    const tools = new AppTools("greeter");
    tools.registerTool(
      "hello",
      {
        description: "Greet someone, and remember that you did.",
        inputSchema: platformInput({ name: z.string() }),
        annotations: { readOnlyHint: false },
      },
      async (caller, args: { name: string }) => {
        await greetings.record(caller.workspaceId, caller.principalId, args.name);
        return {
          content: [{ type: "text", text: `${settings.salutation} ${args.name}` }],
          structuredContent: { greeted: args.name, by: caller.principalId, in: caller.workspaceId },
        };
      },
    );
    return { tools, workspaceRoutes: routes };
  },
};

let instance: TestAtrium;
let ws: string;

beforeAll(async () => {
  instance = await startTestAtrium({
    apps: [...PLATFORM_APPS, greeterApp],
    sections: { greeter: { salutation: "ahoy" } },
  });
  ws = await bootstrapWorkspace(instance, "alice");
});

afterAll(async () => {
  await instance?.stop();
});

describe("a platform app added by its module alone", () => {
  it.each(MCP_ERAS)("is listed and called over MCP (%s), as the caller, in this workspace", async (era) => {
    const client = await instance.mcpClient("alice", ws, { era });
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toContain("greeter__hello");
    const result = await client.callTool({ name: "greeter__hello", arguments: { name: "Bob" } });
    expect(result.structuredContent).toMatchObject({ greeted: "Bob", in: ws });
    // Its instance.json section reached it, with the app's own defaults resolved by the app.
    expect(result.content).toEqual([{ type: "text", text: "ahoy Bob" }]);
  });

  it("keeps its records in its own folder of the workspace, one partition per owner", async () => {
    const client = await instance.mcpClient("alice", ws);
    await client.callTool({ name: "greeter__hello", arguments: { name: "Dora" } });
    const owner = testPrincipal("alice").id;
    const names = await readdir(join(instance.root, ws, "greeter", owner));
    expect(names).toContain("Dora");
  });

  it("answers its REST route behind the workspace gate, and a stranger gets the one 404", async () => {
    const own = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/greetings`);
    expect(own.status).toBe(200);
    expect(((await own.json()) as { greeted: string[] }).greeted).toContain("Dora");
    const stranger = await instance.rest("mallory", "GET", `/v1/workspaces/${ws}/greetings`);
    const nowhere = await instance.rest("mallory", "GET", "/v1/workspaces/ws_0000000000000000/greetings");
    expect(stranger.status).toBe(404);
    expect(await stranger.text()).toBe(await nowhere.text());
  });

  it("goes through the one dispatch over REST too", async () => {
    const response = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/tools/call`, {
      name: "greeter__hello",
      arguments: { name: "Carol" },
    });
    expect(await response.json()).toMatchObject({ structuredContent: { greeted: "Carol" } });
  });

  it("has its instance.json section validated with the file: a wrong field is refused by name", async () => {
    const failure = await startTestAtrium({
      apps: [...PLATFORM_APPS, greeterApp],
      sections: { greeter: { salutation: 5 } },
    }).catch((error: unknown) => error);
    expect(String(failure)).toContain("greeter.salutation: must be string");
  });
});
