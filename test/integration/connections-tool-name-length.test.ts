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

// MCP 2025-11-25 (and 2026-07-28) say a tool name SHOULD be 1 to 128 characters, and the SDK's own
// validateToolName calls a longer one invalid. A remote tool's own name may be 128 characters and a
// connection's 63 (66 with `my_`): served as `<connection>__<tool>`, a client was listed names of
// up to 196 characters. Photographing now judges the name as served (adr/0039, amended 2026-12-07).
const TOOL = "a".repeat(100);
/** The longest connection name that serves TOOL in 128 characters. */
const FITS = `c${"x".repeat(25)}`;
let tools = [TOOL];
let server: HandWrittenToolsServer;
let url: string;
let instance: TestAtrium;
let ws: string;
const { log, lines } = capturingLogger("info");

beforeAll(async () => {
  server = await startHandWrittenToolsServer("long-names", () => tools.map(plainTool));
  url = server.url;
  instance = await startConnectionsAtrium("atrium-tool-name-length-", new FakeTime(Date.now()), log);
  ws = await bootstrapWorkspace(instance, "alice");
});

afterAll(async () => {
  await instance?.stop();
  server?.close();
});

async function listedNames(): Promise<string[]> {
  const client = await instance.mcpClient("alice", ws);
  return (await client.listTools()).tools.map((t) => t.name);
}

describe("a namespaced tool name", () => {
  it("is never served longer than the 128 characters MCP allows: the add is refused, saying a shorter connection name helps", async () => {
    // A personal connection's owner gives the name without the `my_` Atrium adds: told 3 fewer.
    for (const [body, room] of [
      [{ name: `c${"x".repeat(62)}`, url }, 26],
      [{ name: `c${"x".repeat(62)}`, url, personal: true }, 23],
    ] as const) {
      const added = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/connections`, body);
      const text = await added.text();
      expect(added.status, text).toBe(400);
      expect(text).toContain("over the 128 MCP allows");
      expect(text).toContain(`a connection name of at most ${room} characters would take it`);
    }
    const listed = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/connections`);
    expect(((await listed.json()) as { connections: unknown[] }).connections).toEqual([]);
    expect((await listedNames()).filter((name) => name.length > 128)).toEqual([]);
    expect(lines.filter((l) => (l.level as number) >= 50)).toEqual([]);
  });

  it("is served at exactly 128, and a refresh to a longer one is refused, the current snapshot still served", async () => {
    await addConnection(instance, ws, { name: FITS, url });
    expect(await listedNames()).toContain(`${FITS}__${TOOL}`);
    tools = [TOOL, `${TOOL}b`];
    const refreshed = await instance.rest(
      "alice",
      "POST",
      `/v1/workspaces/${ws}/connections/${FITS}/tools/refresh`,
    );
    const text = await refreshed.text();
    expect(refreshed.status, text).toBe(400);
    expect(text).toContain("129 characters, over the 128 MCP allows");
    const names = (await listedNames()).filter((name) => name.startsWith(`${FITS}__`));
    expect(names).toEqual([`${FITS}__${TOOL}`]);
  });
});
