import { randomBytes } from "node:crypto";
import { rm } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, capturingLogger, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { callTool, connectionView } from "../helpers/connections.ts";
import { startConnectionsAtrium } from "../helpers/connections-atrium.ts";
import { eventually } from "../helpers/eventually.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { type InterceptingProxy, startInterceptingProxy } from "../helpers/intercepting-proxy.ts";
import { addMember } from "../helpers/members.ts";
import { type RemoteServer, startRemoteServer } from "../helpers/remote-server.ts";

// A connection's server that answers 200 application/json with a body that is not JSON, quoting the
// credential it was sent (ADR 0067): the parser's message quotes the body's start, so a prefix of
// the credential would reach the admin's 400, the check's last look every member reads, and the
// log. None of them may carry any of it.

/** Starts with a mark no other text here has, so any start of it that leaks is found. */
const SECRET = `Zq9-${randomBytes(12).toString("hex")}`;
const LEAKED = SECRET.slice(0, 4);
const CREDENTIAL_MS = 60_000;
const NOT_JSON = { status: 200, headers: { "content-type": "application/json" }, body: `{"echo": ${SECRET}` };
const time = new FakeTime(Date.now());
const captured = capturingLogger("debug");
let remote: RemoteServer;
let through: InterceptingProxy;
let instance: TestAtrium;
let ws: string;

function add(name: string) {
  return instance.rest("alice", "POST", `/v1/workspaces/${ws}/connections`, {
    name,
    url: through.url.href,
    auth: { kind: "static", header: "x-api-key", value: SECRET },
  });
}

beforeAll(async () => {
  remote = await startRemoteServer({ requireHeader: { name: "x-api-key", value: SECRET } });
  through = await startInterceptingProxy(remote.url);
  instance = await startConnectionsAtrium("atrium-connection-replies-", time, captured.log, {
    credentialCheckIntervalSeconds: CREDENTIAL_MS / 1000,
  });
  ws = await bootstrapWorkspace(instance, "alice");
  await addMember(instance.rest, "alice", ws, "bob", { principalId: testPrincipal("bob").id });
  expect((await add("unreadable")).status).toBe(201);
});

afterAll(async () => {
  await instance?.stop();
  await through?.close();
  await remote?.stop();
  if (instance) await rm(instance.dir, { recursive: true, force: true });
});

describe("a server whose 200 answer is not JSON and quotes the credential", () => {
  it("a failed call is logged by its kind, with no start of the credential", async () => {
    through.intercept((method) => (method === "tools/call" ? NOT_JSON : undefined));
    expect((await callTool(instance, ws, "unreadable__echo", { text: "x" })).isError).toBe(true);
    const logged = captured.lines.find(
      (line) => line.msg === "tool failed unexpectedly" && line.tool === "unreadable__echo",
    );
    expect(JSON.stringify(logged)).toContain("SyntaxError");
    expect(JSON.stringify(logged)).not.toContain(LEAKED);
  });

  it("the credential check's last look, which every member reads, says it failed and no more", async () => {
    through.intercept(() => NOT_JSON);
    await time.advance(CREDENTIAL_MS);
    const view = () =>
      connectionView<{ health: { credential: { outcome: string; detail?: string } | null } }>(
        instance,
        ws,
        "unreadable",
        "bob",
      );
    await eventually(async () => expect((await view()).health.credential?.outcome).toBe("failed"), {
      timeout: 10_000,
    });
    expect((await view()).health.credential?.detail).toContain("ERA_NEGOTIATION_FAILED");
    expect(JSON.stringify(await view())).not.toContain(LEAKED);
  });

  it("an admin's add and refresh are refused with a 400 that names the failure, not the server's words", async () => {
    through.intercept(() => NOT_JSON);
    const added = await add("refused");
    expect(added.status).toBe(400);
    const refresh = await instance.rest(
      "alice",
      "POST",
      `/v1/workspaces/${ws}/connections/unreadable/tools/refresh`,
    );
    expect(refresh.status).toBe(400);
    const texts = [await added.text(), await refresh.text()];
    for (const text of texts) expect(text).toContain("not repeated");
    expect(JSON.stringify([texts, captured.lines])).not.toContain(LEAKED);
  });
});
