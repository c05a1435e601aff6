import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { callTool, connectionView } from "../helpers/connections.ts";
import { CREDENTIALS_SECTION, keyedDir } from "../helpers/credential-key.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import {
  authorizeByHand,
  goUrlIn,
  type ScriptedOAuthServer,
  startScriptedOAuthServer,
} from "../helpers/scripted-oauth-server.ts";

// OAuth connections against a server whose answers a test rewrites (test/helpers/scripted-oauth-server.ts):
// what a hostile or odd authorization server or MCP server says is held to the rules an admin is.
// No browser: the go_url and the callback are driven by hand with the binding cookie.

const time = new FakeTime(Date.now());
let instance: TestAtrium;
let server: ScriptedOAuthServer;
let ws: string;

beforeAll(async () => {
  server = await startScriptedOAuthServer();
  instance = await startTestAtrium({
    dir: await keyedDir("atrium-connections-oauth-hostile-"),
    clock: time.clock,
    timers: time.timers,
    sections: {
      credentials: CREDENTIALS_SECTION,
      connections: {
        allowPrivateAddresses: true,
        healthIntervalSeconds: 3600,
        credentialCheckIntervalSeconds: 86_400,
      },
    },
  });
  ws = await bootstrapWorkspace(instance, "alice");
});

afterAll(async () => {
  await instance?.stop();
  await server?.close();
});

beforeEach(() => {
  server.challengeScope = "read";
  server.stepUpScope = "read write";
});

function add(name: string, auth: Record<string, unknown> = { kind: "oauth", scopes: ["read"] }) {
  return instance.rest("alice", "POST", `/v1/workspaces/${ws}/connections`, { name, url: server.url, auth });
}

async function connected(name: string): Promise<void> {
  const response = await add(name);
  expect(response.status).toBe(201);
  const { go_url } = (await response.json()) as { go_url: string };
  expect((await authorizeByHand(instance, "alice", go_url)).status).toBe(200);
}

const EIGHTY_SCOPES = Array.from({ length: 80 }, (_, i) => `s${i}`).join(" ");

describe("scopes the server asks for are held to the rules an admin's are", () => {
  it("a 403 insufficient_scope naming 80 scopes answers a readable tool error and starts no step-up", async () => {
    await connected("scope-flood");
    server.stepUpScope = EIGHTY_SCOPES;
    const refused = await callTool(instance, ws, "scope-flood__needs_more");
    expect(refused.isError).toBe(true);
    const text = refused.content?.[0]?.text ?? "";
    expect(text).toContain("will not request");
    expect(goUrlIn(text)).toBeUndefined();
    expect(text).not.toContain("s79");
    const view = await connectionView<{ state: string; auth: { scopes: string[] } }>(
      instance,
      ws,
      "scope-flood",
    );
    expect(view).toMatchObject({ state: "running", auth: { scopes: ["read"] } });
    // A challenge within the rules still steps up, to the union.
    server.stepUpScope = "read write";
    const stepUp = goUrlIn((await callTool(instance, ws, "scope-flood__needs_more")).content?.[0]?.text);
    expect((await authorizeByHand(instance, "alice", stepUp as string)).status).toBe(200);
    expect((await callTool(instance, ws, "scope-flood__needs_more")).isError).toBeFalsy();
  });

  it("a 401 challenge naming 80 scopes refuses an add without scopes, and nothing is stored", async () => {
    server.challengeScope = EIGHTY_SCOPES;
    const response = await add("default-flood", { kind: "oauth" });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain("auth.scopes");
    expect(
      (await instance.rest("alice", "GET", `/v1/workspaces/${ws}/connections/default-flood`)).status,
    ).toBe(404);
  });
});
