import { McpServer } from "@modelcontextprotocol/server";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as z from "zod";
import type { PlatformApp } from "../../src/platform/app.ts";
import { PLATFORM_APPS } from "../../src/platform/index.ts";
import { platformInput, platformTool } from "../../src/platform/platform-tool.ts";
import type { AppEnv } from "../../src/web/app-env.ts";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { MCP_ERAS } from "../helpers/mcp-eras.ts";

// "Adding a platform app is a folder and one line": an app defined here, with no other edit to
// Atrium, is listed and called over MCP in both eras and answers its REST route behind the gate.

const greeterApp: PlatformApp = {
  name: "greeter",
  createServer(workspaceId) {
    const server = new McpServer({ name: "greeter", version: "0.0.0" });
    server.registerTool(
      "hello",
      {
        description: "Say hello to the caller.",
        inputSchema: platformInput({ name: z.string() }),
        annotations: { readOnlyHint: true },
      },
      platformTool(workspaceId, async (caller, args: { name: string }) => ({
        content: [{ type: "text", text: `hello ${args.name}` }],
        structuredContent: { greeted: args.name, by: caller.principalId, in: caller.workspaceId },
      })),
    );
    return server;
  },
  workspaceRoutes() {
    const app = new Hono<AppEnv>();
    app.get("/greeting", (c) => c.json({ greeting: `hello from ${c.get("admission").workspace.name}` }));
    return app;
  },
};

let instance: TestAtrium;
let ws: string;

beforeAll(async () => {
  instance = await startTestAtrium({ apps: [...PLATFORM_APPS, greeterApp] });
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
  });

  it("answers its REST route behind the workspace gate, and a stranger gets the one 404", async () => {
    const own = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/greeting`);
    expect(own.status).toBe(200);
    expect(await own.json()).toEqual({ greeting: expect.stringMatching(/^hello from /) });
    const stranger = await instance.rest("mallory", "GET", `/v1/workspaces/${ws}/greeting`);
    const nowhere = await instance.rest("mallory", "GET", "/v1/workspaces/ws_0000000000000000/greeting");
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
});
