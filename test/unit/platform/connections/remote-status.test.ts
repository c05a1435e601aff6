import { createServer as createHttpServer } from "node:http";
import { type AddressInfo, createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConnectionSettings } from "../../../../src/platform/connections/config.ts";
import type { ConnectionRecord } from "../../../../src/platform/connections/model.ts";
import { type OAuthBearers, RemoteServers } from "../../../../src/platform/connections/remote.ts";
import { connectionRecord } from "../../../helpers/connections.ts";
import { type RemoteServer, startRemoteServer } from "../../../helpers/remote-server.ts";

// What a connection's client tells onStatus is the answer it got: for an OAuth connection, after
// its one retry with a refreshed token. A 401 the refresh cured must not wake the credential
// check, which would take it for a lapsed credential (health.ts).

let remote: RemoteServer;

beforeAll(async () => {
  remote = await startRemoteServer({ requireHeader: { name: "authorization", value: "Bearer fresh" } });
});

afterAll(async () => {
  await remote?.stop();
});

const SETTINGS = {
  allowPrivateAddresses: true,
  requestTimeoutMs: 10_000,
  maxResponseBytes: 1_000_000,
} as ConnectionSettings;

function record(): ConnectionRecord {
  return connectionRecord("ws_0123456789abcdef", {
    name: "notes",
    url: remote.url.href,
    auth: { kind: "oauth", issuer: "http://127.0.0.1:1", scopes: ["read"], tokens: "cred_x" },
  });
}

/** Hands out a token the server refuses until it is told that one was refused. */
function bearers(refreshes: string[]): OAuthBearers {
  return {
    bearer: async (_record, rejected) => {
      if (rejected !== "stale") return "stale";
      refreshes.push(rejected);
      return "fresh";
    },
    refused: () => false,
    stepUp: async () => {
      throw new Error("no step-up in this test");
    },
    secrets: () => ["stale", "fresh"],
  };
}

describe("a connection's client and onStatus", () => {
  it("hears the answer after an OAuth connection's retry, not the 401 a refresh cured", async () => {
    const refreshes: string[] = [];
    const servers = new RemoteServers(SETTINGS, undefined as never, () => Date.now(), bearers(refreshes));
    const heard: number[] = [];
    const source = await servers.source(record(), { onStatus: (status) => heard.push(status) });
    try {
      expect((await source.listTools()).length).toBeGreaterThan(0);
    } finally {
      await source.close();
    }
    expect(refreshes.length).toBeGreaterThan(0);
    expect(heard.length).toBeGreaterThan(0);
    expect(heard.filter((status) => status === 401)).toEqual([]);
  });

  it("still hears a 401 the refresh did not cure", async () => {
    await remote.control({ reject401: true });
    try {
      const servers = new RemoteServers(SETTINGS, undefined as never, () => Date.now(), bearers([]));
      const heard: number[] = [];
      const source = await servers.source(record(), { onStatus: (status) => heard.push(status) });
      await expect(source.listTools()).rejects.toThrow();
      await source.close().catch(() => undefined);
      expect(heard).toContain(401);
    } finally {
      await remote.control({ reject401: false });
    }
  });
});

describe("the transport probe's detail, which every member reads", () => {
  it("keeps the local reason and never what the server wrote", async () => {
    const servers = new RemoteServers(SETTINGS, undefined as never, () => Date.now());
    const garbage = createServer((socket) => socket.end("NOT-HTTP the-servers-own-words\r\n\r\n"));
    await new Promise<void>((resolve) => garbage.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = garbage.address() as AddressInfo;
      const answered = await servers.reachable(`http://127.0.0.1:${port}/mcp`);
      expect(answered.ok).toBe(false);
      expect(answered.detail).toContain("what the server sent is not repeated");
      expect(answered.detail).not.toContain("the-servers-own-words");
    } finally {
      garbage.close();
    }
    expect(await servers.reachable("http://127.0.0.1:1/mcp")).toEqual({
      ok: false,
      detail: "connect ECONNREFUSED 127.0.0.1:1",
    });
  });

  it("takes a redirect for an answer: the server is there, though no request of a client follows it", async () => {
    const servers = new RemoteServers(SETTINGS, undefined as never, () => Date.now());
    const moving = createHttpServer((request, response) => {
      request.resume();
      response.writeHead(307, { location: "/elsewhere" }).end();
    });
    await new Promise<void>((resolve) => moving.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = moving.address() as AddressInfo;
      expect(await servers.reachable(`http://127.0.0.1:${port}/mcp`)).toEqual({ ok: true });
    } finally {
      moving.close();
    }
  });
});
