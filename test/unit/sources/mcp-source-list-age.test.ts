import { afterAll, beforeAll, expect, it } from "vitest";
import { McpSource } from "../../../src/sources/mcp-source.ts";
import { type RemoteServer, startRemoteServer } from "../../helpers/remote-server.ts";

// A remote server's tool list is kept for `listMaxAgeMs` (connections.toolListMaxAgeSeconds):
// measured by the wall clock, so a clock stepped back behind the listing must not stretch it.

let remote: RemoteServer;

beforeAll(async () => {
  remote = await startRemoteServer();
});

afterAll(async () => {
  await remote.stop();
});

const listings = async () => (await remote.requests()).filter((m) => m.method === "tools/list").length;

it("a remote tool list is listed again once the clock is stepped back behind the listing (ADR 0168)", async () => {
  let nowMs = Date.now();
  const source = new McpSource(
    "remote",
    { kind: "streamable-http", url: remote.url, listMaxAgeMs: 60_000 },
    () => nowMs,
  );
  try {
    await source.listTools();
    nowMs += 30_000;
    await source.listTools(); // kept: half its age
    expect(await listings()).toBe(1);
    nowMs -= 24 * 60 * 60 * 1000; // NTP steps the wall clock back a day
    // Before, the list was kept until the clock had caught up with the listing, a day from now.
    await source.listTools();
    expect(await listings()).toBe(2);
  } finally {
    await source.close();
  }
});
