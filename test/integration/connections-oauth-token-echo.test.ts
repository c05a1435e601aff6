import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, capturingLogger, type TestAtrium } from "../helpers/atrium.ts";
import { callTool } from "../helpers/connections.ts";
import { startConnectionsAtrium } from "../helpers/connections-atrium.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import {
  authorizeByHand,
  type ScriptedOAuthServer,
  startScriptedOAuthServer,
} from "../helpers/scripted-oauth-server.ts";

// A token endpoint that echoes the form it was sent (client secret, code, verifier, refresh token)
// in its error, its description or a reply that is not JSON: nothing of it reaches a log line, the
// callback page, a connection's view, a tool result, a check or a notification (ADR 0067).

const CLIENT_SECRET = "CSECRET_zz9plural_alpha_0123456789";
const time = new FakeTime(Date.now());
const { log, lines } = capturingLogger("debug");
/** Every answer Atrium gave in these tests, searched with the log for what the server was sent. */
const seen: string[] = [];
let instance: TestAtrium;
let server: ScriptedOAuthServer;
let ws: string;

beforeAll(async () => {
  server = await startScriptedOAuthServer();
  server.metadata = { token_endpoint_auth_methods_supported: ["client_secret_post"] };
  server.register = (body) => {
    const clientId = `client-${server.clients.size + 1}`;
    server.clients.set(clientId, (body.redirect_uris as string[]) ?? []);
    return Response.json(
      {
        ...body,
        client_id: clientId,
        client_secret: CLIENT_SECRET,
        token_endpoint_auth_method: "client_secret_post",
      },
      { status: 201 },
    );
  };
  instance = await startConnectionsAtrium("atrium-connections-oauth-token-echo-", time, log, {
    healthIntervalSeconds: 3600,
    credentialCheckIntervalSeconds: 86_400,
  });
  ws = await bootstrapWorkspace(instance, "alice");
});

afterAll(async () => {
  await instance?.stop();
  await server?.close();
});

/** The secrets the token endpoint was sent, the client secret included. */
function secretsSent(): string[] {
  const sent = new Set<string>([CLIENT_SECRET]);
  for (const form of server.tokenForms) {
    for (const key of ["code", "code_verifier", "refresh_token", "client_secret"]) {
      const value = form.get(key);
      if (value && value.length >= 8) sent.add(value);
    }
  }
  return [...sent];
}

function leaks(): string[] {
  const all = [JSON.stringify(lines), ...seen].join("\n");
  return secretsSent().filter((secret) => all.includes(secret));
}

/** An OAuth connection added, and its go_url followed to the callback: the page's answer. */
async function authorized(name: string): Promise<{ status: number; text: string }> {
  const response = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/connections`, {
    name,
    url: server.url,
    auth: { kind: "oauth", scopes: ["read"] },
  });
  seen.push(await response.clone().text());
  const { go_url } = (await response.json()) as { go_url: string };
  const landing = await authorizeByHand(instance, "alice", go_url);
  seen.push(landing.text);
  return landing;
}

describe("a token endpoint that echoes the form it was sent", () => {
  it("at the code exchange, in an `error` that is no OAuth code and its description", async () => {
    server.token = (form) =>
      Response.json({ error: `bad ${form.toString()}`, error_description: form.toString() }, { status: 400 });
    await authorized("echo-code");
    seen.push(
      await (await instance.rest("alice", "GET", `/v1/workspaces/${ws}/connections/echo-code`)).text(),
    );
    expect(leaks()).toEqual([]);
  });

  it("at the code exchange, in a 200 reply that is not JSON", async () => {
    server.token = (form) =>
      new Response(`{"echo": "${form.toString()}`, {
        status: 200,
        headers: { "content-type": "application/json" },
      });
    await authorized("echo-code-2");
    expect(leaks()).toEqual([]);
  });

  it("at a refresh: a 500 body, an unknown code, a description, a 200 that is not JSON", async () => {
    server.token = undefined;
    server.expiresIn = 60;
    const landing = await authorized("echo-refresh");
    expect(landing.status, landing.text).toBe(200);
    const answers: ((form: URLSearchParams) => Response)[] = [
      (form) => new Response(`upstream says: ${form.toString()}`, { status: 500 }),
      (form) => Response.json({ error: `nope ${form.toString()}` }, { status: 400 }),
      (form) =>
        Response.json({ error: "invalid_request", error_description: form.toString() }, { status: 400 }),
      (form) =>
        new Response(`{"access_token": "${form.toString()}`, {
          status: 200,
          headers: { "content-type": "application/json" },
        }),
    ];
    const path = `/v1/workspaces/${ws}/connections/echo-refresh`;
    for (const answer of answers) {
      server.token = answer;
      await time.advance(120_000);
      seen.push(JSON.stringify(await callTool(instance, ws, "echo-refresh__echo", { text: "hi" })));
      seen.push(await (await instance.rest("alice", "GET", path)).text());
      seen.push(await (await instance.rest("alice", "POST", `${path}/refresh`, {})).text());
    }
    seen.push(await (await instance.rest("alice", "GET", `/v1/workspaces/${ws}/notifications`)).text());
    expect(server.tokenForms.some((form) => form.get("grant_type") === "refresh_token")).toBe(true);
    expect(leaks()).toEqual([]);
  });
});
