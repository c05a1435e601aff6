import { afterAll, beforeAll, expect, it } from "vitest";
import { McpSource, SourceRetired } from "../../src/sources/mcp-source.ts";
import { NO_CALLER } from "../../src/workspace/access-check.ts";
import { eventually } from "../helpers/eventually.ts";
import { type RemoteServer, startRemoteServer } from "../helpers/remote-server.ts";

// A 2025 server with sessions gets a GET event stream from the client library during the connect,
// which the connect does not wait for: closing the client must end it, or each client closed
// (every refresh, swap, credential check and idle close) leaves a socket open (ConnectCut).

let remote: RemoteServer;
beforeAll(async () => {
  remote = await startRemoteServer({ legacySessions: true, eras: ["2025-11-25"] });
});
afterAll(async () => remote?.stop());

it.each(["now", "superseded"] as const)(
  "the event stream opened during the connect ends when the client is closed (%s)",
  async (how) => {
    const requests: Array<{ method: string; signal: AbortSignal | undefined }> = [];
    const counted = (url: string | URL, init?: RequestInit) => {
      requests.push({ method: init?.method ?? "GET", signal: init?.signal ?? undefined });
      return fetch(url, init);
    };
    const source = new McpSource("remote", { kind: "streamable-http", url: remote.url, fetch: counted });
    expect((await source.listTools()).length).toBeGreaterThan(0);
    await eventually(() => expect(requests.some((request) => request.method === "GET")).toBe(true));
    await source.close(how);
    const streams = requests.filter((request) => request.method === "GET");
    await eventually(() =>
      expect(streams.map((stream) => stream.signal?.aborted)).toEqual(streams.map(() => true)),
    );
  },
);

it("a call that reaches a source after its close is refused, and connects nothing (after its close)", async () => {
  const requests: string[] = [];
  const counted = (url: string | URL, init?: RequestInit) => {
    requests.push(init?.method ?? "GET");
    return fetch(url, init);
  };
  const caller = {
    principalId: `usr_${"a".repeat(24)}`,
    workspaceId: "ws_0123456789abcdef",
    access: NO_CALLER,
  };
  const source = new McpSource("remote", { kind: "streamable-http", url: remote.url, fetch: counted });
  expect((await source.listTools()).length).toBeGreaterThan(0);
  await source.close("superseded");
  const sent = requests.length;
  await expect(source.callTool("echo", { text: "late" }, caller)).rejects.toBeInstanceOf(SourceRetired);
  await expect(source.listTools()).rejects.toBeInstanceOf(SourceRetired);
  expect(requests.length).toBe(sent);
});

it("a connect a reset cut does not make the source forget the newer client, which a close still ends", async () => {
  let hang = true;
  const requests: Array<{ method: string; signal: AbortSignal | undefined; newer: boolean }> = [];
  const counted = (url: string | URL, init?: RequestInit) => {
    requests.push({ method: init?.method ?? "GET", signal: init?.signal ?? undefined, newer: !hang });
    if (hang)
      return new Promise<Response>((_resolve, reject) =>
        init?.signal?.addEventListener("abort", () => reject(init.signal?.reason), { once: true }),
      );
    return fetch(url, init);
  };
  const source = new McpSource("remote", { kind: "streamable-http", url: remote.url, fetch: counted });
  // A first connect the server holds; the gate resets the client (a broken transport) while a
  // second call connects afresh.
  const first = source.listTools().catch((error: unknown) => error);
  await eventually(() => expect(requests.length).toBeGreaterThan(0));
  hang = false;
  const reset = source.reset();
  const second = source.listTools();
  await reset;
  expect(await first).toBeInstanceOf(Error);
  expect((await second).length).toBeGreaterThan(0);
  await eventually(() => expect(requests.some((r) => r.newer && r.method === "GET")).toBe(true));
  await source.close("superseded");
  const streams = requests.filter((r) => r.newer && r.method === "GET");
  await eventually(() => expect(streams.map((s) => s.signal?.aborted)).toEqual(streams.map(() => true)));
});
