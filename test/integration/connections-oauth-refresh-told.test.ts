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

// A token refresh that fails at the authorization server is told as one, whichever request met it
// (ADR 0067): on the connect of a fresh client (the first call after a boot or an idle close) the
// client library wraps it in its ERA_NEGOTIATION_FAILED, which was all the log said, so nobody
// could tell a token endpoint was down rather than the MCP server (remote-failure.ts).

const time = new FakeTime(Date.now());
let instance: TestAtrium;
let server: ScriptedOAuthServer;
let ws: string;
const { log, lines } = capturingLogger("info");

beforeAll(async () => {
  server = await startScriptedOAuthServer();
  server.expiresIn = 60;
  instance = await startConnectionsAtrium("atrium-connections-oauth-refresh-told-", time, log, {
    healthIntervalSeconds: 3600,
    credentialCheckIntervalSeconds: 86_400,
  });
  ws = await bootstrapWorkspace(instance, "alice");
});

afterAll(async () => {
  await instance?.stop();
  await server?.close();
});

describe("a refresh the authorization server answers 503", () => {
  it("on the connect of a fresh client, is logged as the authorization server's error, not as an era negotiation", async () => {
    const response = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/connections`, {
      name: "as-down",
      url: server.url,
      auth: { kind: "oauth", scopes: ["read"] },
    });
    const { go_url } = (await response.json()) as { go_url: string };
    expect((await authorizeByHand(instance, "alice", go_url)).status).toBe(200);

    // No call before the expiry: the first call connects the connection's client.
    server.token = () => new Response("maintenance sk-rv56-quoted", { status: 503 });
    await time.advance(120_000);
    const before = lines.length;
    const result = await callTool(instance, ws, "as-down__echo", { text: "hi" });
    expect(server.tokenForms.some((form) => form.get("grant_type") === "refresh_token")).toBe(true);
    expect(result.isError).toBe(true);
    const logged = lines
      .slice(before)
      .filter((line) => (line.level as number) >= 40)
      .map((line) => `${line.msg}: ${(line.err as { message?: string } | undefined)?.message ?? ""}`);
    expect(logged).toEqual([
      "tool failed unexpectedly: The authorization server answered server_error; what it wrote is not repeated here.",
    ]);
    expect(JSON.stringify(lines.slice(before))).not.toContain("sk-rv56-quoted");
  });
});
