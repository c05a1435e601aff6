import { rm } from "node:fs/promises";
import { afterAll, beforeAll, expect, it } from "vitest";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { CREDENTIALS_SECTION, keyedDir } from "../helpers/credential-key.ts";
import { mcpPost, obtainTokens } from "../helpers/oauth.ts";
import { type RemoteServer, startRemoteServer } from "../helpers/remote-server.ts";

// A connection's tool called at /mcp with a token not granted the scope it needs is refused
// with the 403 a client steps up from, before the dispatch sees it; the audit ledger still
// records the attempt and its refusal (deniedBy "scope"), as docs/connections.md promises.

let dir: string;
let instance: TestAtrium;
let remote: RemoteServer;
let ws: string;

beforeAll(async () => {
  dir = await keyedDir("atrium-scope-audit-");
  remote = await startRemoteServer();
  instance = await startTestAtrium({
    dir,
    sections: { credentials: CREDENTIALS_SECTION, connections: { allowPrivateAddresses: true } },
  });
  ws = await bootstrapWorkspace(instance, "alice");
}, 60_000);

afterAll(async () => {
  await instance?.stop();
  await remote?.stop();
  await rm(dir, { recursive: true, force: true });
});

it("records a call the token's scope refuses at /mcp: requested, then denied by scope", async () => {
  const added = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/connections`, {
    name: "calc",
    url: remote.url.href,
  });
  expect(added.status).toBe(201);
  const { access_token } = await obtainTokens(instance, "alice", ws, { scope: "mcp:read" });
  const call = {
    jsonrpc: "2.0",
    id: 7,
    method: "tools/call",
    params: { name: "calc__write", arguments: { text: "x" } },
  };
  const refused = await mcpPost(instance, ws, access_token, call);
  expect(refused.status).toBe(403);
  const ledger = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/audit`);
  const { entries } = (await ledger.json()) as { entries: Record<string, unknown>[] };
  const mine = entries.filter((entry) => entry.connection === "calc" && entry.tool === "write");
  expect(mine.map((entry) => entry.phase).sort()).toEqual(["decision", "requested"]);
  expect(mine.find((entry) => entry.phase === "decision")).toMatchObject({
    decision: "denied",
    deniedBy: "scope",
  });
});
