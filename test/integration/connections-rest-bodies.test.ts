import { rm } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, capturingLogger, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { callTool } from "../helpers/connections.ts";
import { startConnectionsAtrium } from "../helpers/connections-atrium.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { addMember } from "../helpers/members.ts";
import { type RemoteServer, startRemoteServer } from "../helpers/remote-server.ts";
import { type ScriptedOAuthServer, startScriptedOAuthServer } from "../helpers/scripted-oauth-server.ts";

// The connections routes' bodies are checked by their tool twins' schemas (ADR 0095): a field a
// route does not read is refused by name, never dropped. A dropped `headers` stored a connection
// with no credential and answered 201; a dropped `scope` started an authorization for the
// connection's own scopes.

const time = new FakeTime(Date.now());
const captured = capturingLogger("error");
let instance: TestAtrium;
let ws: string;
let remote: RemoteServer;
let oauthServer: ScriptedOAuthServer;

beforeAll(async () => {
  remote = await startRemoteServer();
  oauthServer = await startScriptedOAuthServer();
  instance = await startConnectionsAtrium("atrium-connections-rest-bodies-", time, captured.log, {
    healthIntervalSeconds: 3600,
    credentialCheckIntervalSeconds: 86_400,
  });
  ws = await bootstrapWorkspace(instance, "alice");
});

afterAll(async () => {
  await instance?.stop();
  await remote?.stop();
  await oauthServer?.close();
  if (instance) await rm(instance.dir, { recursive: true, force: true });
});

const rest = (method: string, path: string, body?: Record<string, unknown>) =>
  instance.rest("alice", method, `/v1/workspaces/${ws}${path}`, body);

async function refusal(response: Response): Promise<string> {
  const text = await response.text();
  expect(response.status, text).toBe(400);
  return (JSON.parse(text) as { error: { code: string; message: string } }).error.message;
}

async function connectionNames(): Promise<string[]> {
  const listed = await rest("GET", "/connections");
  return ((await listed.json()) as { connections: { name: string }[] }).connections.map((c) => c.name);
}

describe("a connections body field the route does not read is refused by name", () => {
  it("POST /connections with a credential under `headers` stores nothing, and says what the body is", async () => {
    const body = { name: "gh", url: remote.url.href, headers: { authorization: "Bearer s3cret" } };
    const message = await refusal(await rest("POST", "/connections", body));
    expect(message).toContain('Unrecognized key: "headers"');
    expect(message).toContain('The body is {"name", "url", "auth"?, "personal"?}.');
    expect(message).not.toContain("s3cret");
    expect(await connectionNames()).toEqual([]);
  });

  it("POST /connections refuses what connections__add refuses, in the same words", async () => {
    const body = {
      name: "gh",
      url: remote.url.href,
      auth: { kind: "static", header: "authorization", valu: "x" },
    };
    const message = await refusal(await rest("POST", "/connections", body));
    const tool = await callTool(instance, ws, "connections__add", body);
    expect(tool.isError).toBe(true);
    expect(message).toContain('Unrecognized key: "valu" at auth');
    expect(tool.content?.[0]?.text).toContain('Unrecognized key: "valu" at auth');
    expect(await connectionNames()).toEqual([]);
  });

  it("POST /connections/:name/oauth/start with `scope` for `scopes` starts no authorization", async () => {
    const added = await rest("POST", "/connections", {
      name: "notes",
      url: oauthServer.url,
      auth: { kind: "oauth", scopes: ["read"] },
    });
    expect(added.status, await added.clone().text()).toBe(201);
    const message = await refusal(await rest("POST", "/connections/notes/oauth/start", { scope: ["write"] }));
    expect(message).toContain('Unrecognized key: "scope"');
    expect(message).toContain('The body is {"scopes"?}.');
    // The body the route reads still starts one, and an empty request still needs none.
    expect((await rest("POST", "/connections/notes/oauth/start", { scopes: ["write"] })).status).toBe(200);
    expect((await rest("POST", "/connections/notes/oauth/start")).status).toBe(200);
  });

  it("POST /connections/grants with a stray field grants nothing", async () => {
    const bob = testPrincipal("bob").id;
    await addMember(instance.rest, "alice", ws, "bob", { principalId: bob });
    const body = { principalId: bob, connection: "my_gh", until: "tomorrow" };
    const message = await refusal(await rest("POST", "/connections/grants", body));
    expect(message).toContain('Unrecognized key: "until"');
    const listed = await rest("GET", "/connections/grants");
    expect(((await listed.json()) as { grants: unknown[] }).grants).toEqual([]);
  });
});
