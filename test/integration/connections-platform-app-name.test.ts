import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as z from "zod";
import type { PlatformApp } from "../../src/platform/app.ts";
import { AppTools } from "../../src/platform/app-tools.ts";
import { PLATFORM_APPS } from "../../src/platform/index.ts";
import { platformInput } from "../../src/platform/platform-tool.ts";
import { bootstrapWorkspace, capturingLogger, type TestAtrium } from "../helpers/atrium.ts";
import { startConnectionsAtrium } from "../helpers/connections-atrium.ts";
import { eventually } from "../helpers/eventually.ts";
import { FakeTime, settle } from "../helpers/fake-time.ts";
import { mcpPost, obtainTokens } from "../helpers/oauth.ts";
import { type RemoteServer, startRemoteServer } from "../helpers/remote-server.ts";

// An upgrade can bring a platform app whose name a workspace connection already holds: the name
// was free when the connection was added. The app keeps its name: the connection is not served,
// cannot be enabled, says why, and the rest of the workspace works as before (ADR 0128).

const APP_NAME = "greeter";
const RESERVED = "connection_name_reserved";
/** The credential check's default interval (connections.credentialCheckIntervalSeconds), the longer loop's. */
const CREDENTIAL_CHECK_MS = 300_000;
/** A static credential, so the credential loop looks at a connection that has one. */
const KEYED = { kind: "static", header: "x-api-key", value: "k3y" };

/** The app the upgrade adds: one tool, `greeter__hello`. */
const greeterApp: PlatformApp = {
  name: APP_NAME,
  start() {
    const tools = new AppTools(APP_NAME);
    tools.registerTool(
      "hello",
      {
        description: "Greet someone.",
        inputSchema: platformInput({ name: z.string() }),
        annotations: { readOnlyHint: false },
      },
      async (_caller, args: { name: string }) => ({
        content: [{ type: "text", text: `hello ${args.name}` }],
      }),
    );
    return { tools };
  },
};

interface ToolsBody {
  tools: { name: string; description?: string }[];
}

interface CallBody {
  isError?: boolean;
  content?: { text: string }[];
}

const time = new FakeTime(Date.now());
/** What the instance logs once upgraded: from its boot on. */
const upgraded = capturingLogger("info");
let remote: RemoteServer;
/** The server of the connection "greeter" in service at the upgrade, and of no other. */
let clashing: RemoteServer;
let instance: TestAtrium;
/** Its connection "greeter" is in service at the upgrade, beside connection "calc". */
let serving: string;
/** Its connection "greeter" was disabled before the upgrade. */
let disabled: string;

async function tools(ws: string): Promise<ToolsBody["tools"]> {
  const response = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/tools`);
  expect(response.status).toBe(200);
  return ((await response.json()) as ToolsBody).tools;
}

async function call(ws: string, name: string, args: Record<string, unknown>): Promise<CallBody> {
  const response = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/tools/call`, {
    name,
    arguments: args,
  });
  expect(response.status).toBe(200);
  return (await response.json()) as CallBody;
}

/** The app's own tool answers, and none of the connection's server's tools is served. */
async function expectAppKeepsItsName(ws: string): Promise<void> {
  const names = (await tools(ws)).map((tool) => tool.name);
  expect(names).toContain(`${APP_NAME}__hello`);
  expect(names.filter((name) => name.startsWith(`${APP_NAME}__`))).toEqual([`${APP_NAME}__hello`]);
  const hello = await call(ws, `${APP_NAME}__hello`, { name: "Bob" });
  expect(hello).toMatchObject({ content: [{ type: "text", text: "hello Bob" }] });
  expect(hello.isError).toBeFalsy();
}

async function connection(ws: string, name: string, server = remote, auth?: unknown): Promise<void> {
  const added = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/connections`, {
    name,
    url: server.url.href,
    ...(auth === undefined ? {} : { auth }),
  });
  expect(added.status).toBe(201);
}

interface View {
  state: string;
  health: { transport: unknown; credential: unknown };
  problem?: { code: string; message: string };
}

async function view(ws: string, name: string): Promise<View> {
  const response = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/connections/${name}`);
  expect(response.status).toBe(200);
  return (await response.json()) as View;
}

beforeAll(async () => {
  [remote, clashing] = await Promise.all([startRemoteServer(), startRemoteServer()]);
  const before = await startConnectionsAtrium("atrium-connections-app-name-", time, capturingLogger().log);
  instance = before;
  serving = await bootstrapWorkspace(instance, "alice");
  const created = await instance.rest("alice", "POST", "/v1/workspaces", { name: "quiet" });
  disabled = ((await created.json()) as { id: string }).id;
  await connection(serving, APP_NAME, clashing, KEYED);
  await connection(serving, "calc", remote, KEYED);
  await connection(disabled, APP_NAME);
  const off = await instance.rest(
    "alice",
    "POST",
    `/v1/workspaces/${disabled}/connections/${APP_NAME}/disable`,
  );
  expect(off.status).toBe(200);
  instance = await before.restart({ apps: [...PLATFORM_APPS, greeterApp], log: upgraded.log });
}, 60_000);

afterAll(async () => {
  await instance?.stop();
  await Promise.all([remote?.stop(), clashing?.stop()]);
});

describe("a connection whose name an upgrade gave to a platform app", { timeout: 60_000 }, () => {
  it("leaves the workspace's other tools listed and callable, over REST and MCP", async () => {
    const names = (await tools(serving)).map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(["files__list", "calc__echo"]));
    expect((await call(serving, "files__list", {})).isError).toBeFalsy();
    expect(await call(serving, "calc__echo", { text: "still here" })).toMatchObject({
      content: [{ text: expect.stringContaining("still here") }],
    });
    const client = await instance.mcpClient("alice", serving);
    expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("files__list");
    expect((await client.callTool({ name: "files__list", arguments: {} })).isError).toBeFalsy();
  });

  it("leaves the app its own tools, whether the connection was in service or disabled", async () => {
    await expectAppKeepsItsName(serving);
    await expectAppKeepsItsName(disabled);
  });

  it("is shown as not served, with the reason and what to do", async () => {
    for (const ws of [serving, disabled]) {
      const { problem } = await view(ws, APP_NAME);
      expect(problem?.code).toBe(RESERVED);
      expect(problem?.message).toContain(`platform app named "${APP_NAME}"`);
      expect(problem?.message).toContain("add it again under another name");
    }
    // Its state says so, not how its server was when last looked at; a disabled one stays disabled.
    expect((await view(serving, APP_NAME)).state).toBe("not_served");
    expect((await view(disabled, APP_NAME)).state).toBe("disabled");
    const listed = await instance.rest("alice", "GET", `/v1/workspaces/${serving}/connections`);
    const views = ((await listed.json()) as { connections: { name: string; problem?: unknown }[] })
      .connections;
    expect(views.find((view) => view.name === "calc")?.problem).toBeUndefined();
    expect(views.find((view) => view.name === APP_NAME)?.problem).toMatchObject({ code: RESERVED });
  });

  it("is looked at by neither health loop: its server is not called and its health stays as it was", async () => {
    const before = await view(serving, APP_NAME);
    await clashing.control({ clearCalls: true });
    await time.advance(CREDENTIAL_CHECK_MS);
    await settle();
    // Both loops ran meanwhile: they looked at the workspace's other connection.
    await eventually(
      async () => {
        const calc = await view(serving, "calc");
        expect(calc.health.transport).not.toBeNull();
        expect(calc.health.credential).not.toBeNull();
      },
      { timeout: 10_000 },
    );
    expect(await clashing.requests()).toEqual([]);
    const after = await view(serving, APP_NAME);
    expect(after.health).toEqual(before.health);
    expect(after.state).toBe("not_served");
  });

  it("cannot be enabled: 409 naming the clash, and the app keeps its tools", async () => {
    for (const ws of [disabled, serving]) {
      const response = await instance.rest(
        "alice",
        "POST",
        `/v1/workspaces/${ws}/connections/${APP_NAME}/enable`,
      );
      expect(response.status).toBe(409);
      const { error } = (await response.json()) as { error: { code: string; message: string } };
      expect(error.code).toBe(RESERVED);
      expect(error.message).toContain(`platform app named "${APP_NAME}"`);
      await expectAppKeepsItsName(ws);
    }
  });

  it("is refreshed without being served in the app's place", async () => {
    const response = await instance.rest(
      "alice",
      "POST",
      `/v1/workspaces/${serving}/connections/${APP_NAME}/tools/refresh`,
    );
    expect(response.status).toBe(200);
    const refreshed = (await response.json()) as { connection: { problem?: { code: string } } };
    expect(refreshed.connection.problem?.code).toBe(RESERVED);
    await expectAppKeepsItsName(serving);
  });

  it("publishes no skill over the app's tools", async () => {
    const response = await instance.rest("alice", "GET", `/v1/workspaces/${serving}/skills`);
    const { skills } = (await response.json()) as { skills: { name: string; scope: string }[] };
    expect(skills.map((skill) => skill.name)).toContain("calc");
    expect(skills.map((skill) => skill.name)).not.toContain(APP_NAME);
    const hello = (await tools(serving)).find((tool) => tool.name === `${APP_NAME}__hello`);
    expect(hello?.description).toBe("Greet someone.");
  });

  it("is not named in the audit ledger for a call to the app's tool refused before the dispatch", async () => {
    const { access_token } = await obtainTokens(instance, "alice", disabled, { scope: "mcp:read" });
    const refused = await mcpPost(instance, disabled, access_token, {
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: `${APP_NAME}__hello`, arguments: { name: "Bob" } },
    });
    expect(refused.status).toBe(403);
    const ledger = await instance.rest("alice", "GET", `/v1/workspaces/${disabled}/audit`);
    expect(((await ledger.json()) as { entries: unknown[] }).entries).toEqual([]);
  });

  it("is disabled and removed without taking the app out, and its name stays the app's", async () => {
    // The workspace's registry is loaded, so the disable and the remove meet the app's source there.
    await expectAppKeepsItsName(serving);
    const off = await instance.rest(
      "alice",
      "POST",
      `/v1/workspaces/${serving}/connections/${APP_NAME}/disable`,
    );
    expect(off.status).toBe(200);
    await expectAppKeepsItsName(serving);
    const removed = await instance.rest(
      "alice",
      "DELETE",
      `/v1/workspaces/${serving}/connections/${APP_NAME}`,
    );
    expect(removed.status).toBe(204);
    await expectAppKeepsItsName(serving);
    const again = await instance.rest("alice", "POST", `/v1/workspaces/${serving}/connections`, {
      name: APP_NAME,
      url: remote.url.href,
    });
    expect(again.status).toBe(400);
    await connection(serving, "greeter-remote");
    expect((await tools(serving)).map((tool) => tool.name)).toContain("greeter-remote__echo");
    await expectAppKeepsItsName(serving);
  });

  it("is logged once at boot, for each workspace, saying what to do; no request logged an error", () => {
    const clashes = upgraded.lines.filter((line) => String(line.msg).startsWith("connection not served"));
    expect(clashes.map((line) => line.workspaceId).sort()).toEqual([serving, disabled].sort());
    for (const line of clashes) {
      expect(line).toMatchObject({ level: 40, connection: APP_NAME, app: "connections" });
      expect(line.msg).toContain("a platform app holds its name");
      expect(line.msg).toContain("adds it again under another name");
    }
    expect(upgraded.lines.filter((line) => (line.level as number) >= 50)).toEqual([]);
  });
});
