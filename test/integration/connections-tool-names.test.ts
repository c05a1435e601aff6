import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, capturingLogger, type TestAtrium } from "../helpers/atrium.ts";
import { addConnection } from "../helpers/connections.ts";
import { startConnectionsAtrium } from "../helpers/connections-atrium.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import {
  type HandWrittenToolsServer,
  plainTool,
  startHandWrittenToolsServer,
} from "../helpers/hand-written-tools-server.ts";
import { type RemoteServer, startRemoteServer } from "../helpers/remote-server.ts";

// A connection's tool names as its server gives them and as a member calls them: a name shaped
// like an object's own property, holding `__`, or differing only in case is listed and called as
// itself; a call under a name no server could list (too long, an invisible character, a line
// break) is a tool error, never an unexpected failure. The odd names come from a hand-written
// JSON-RPC server, as a server not built on the SDK would answer.

const NAMES = [
  "__proto__",
  "constructor",
  "toString",
  "hasOwnProperty",
  "valueOf",
  "a__b",
  "Echo",
  "echo",
  "..",
  "-",
];
const { log, lines } = capturingLogger("info");
let handWritten: HandWrittenToolsServer;
let remote: RemoteServer;
let instance: TestAtrium;
let ws: string;

function callAs(name: string): Promise<Response> {
  return instance.rest("alice", "POST", `/v1/workspaces/${ws}/tools/call`, { name, arguments: {} });
}

/** Error-level log lines since `before`: an unexpected failure is logged at error. */
function errorsSince(before: number): unknown[] {
  return lines
    .slice(before)
    .filter((line) => (line.level as number) >= 50)
    .map((line) => [line.msg, (line.err as { message?: string } | undefined)?.message]);
}

beforeAll(async () => {
  handWritten = await startHandWrittenToolsServer("protos", () => NAMES.map(plainTool));
  remote = await startRemoteServer();
  instance = await startConnectionsAtrium("atrium-connections-tool-names-", new FakeTime(Date.now()), log, {
    healthIntervalSeconds: 3600,
    credentialCheckIntervalSeconds: 86_400,
  });
  ws = await bootstrapWorkspace(instance, "alice");
  await addConnection(instance, ws, { name: "p", url: handWritten.url });
  await addConnection(instance, ws, { name: "rs", url: remote.url.href });
});

afterAll(async () => {
  await instance?.stop();
  await remote?.stop();
  handWritten?.close();
});

describe("a connection's tools named like an object's own properties, with `__`, or by case", () => {
  it("are each called as themselves", async () => {
    const before = lines.length;
    const results: string[] = [];
    for (const name of NAMES) {
      const response = await callAs(`p__${name}`);
      const body = (await response.json()) as { content?: { text: string }[] };
      results.push(`${name}: ${response.status} ${body.content?.[0]?.text}`);
    }
    expect({ results, errors: errorsSince(before) }).toEqual({
      results: NAMES.map((name) => `${name}: 200 called ${name}`),
      errors: [],
    });
  });

  it("are listed under their namespaced names", async () => {
    const text = await (await instance.rest("alice", "GET", `/v1/workspaces/${ws}/tools`)).text();
    for (const name of NAMES) expect(text).toContain(JSON.stringify(`p__${name}`));
  });
});

describe("a call under a name no server could list", () => {
  it.each([
    ["200 letters", "a".repeat(200)],
    ["a right-to-left override", "ec\u202eho"],
    ["a line break", "ec\nho"],
  ])("%s: a tool error, not an unexpected failure", async (_, tool) => {
    const before = lines.length;
    const response = await callAs(`rs__${tool}`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ isError: true });
    expect(errorsSince(before)).toEqual([]);
  });
});
