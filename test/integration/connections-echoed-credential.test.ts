import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { type ServerType, serve } from "@hono/node-server";
import { createMcpHandler, type McpHttpHandler, McpServer } from "@modelcontextprotocol/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConnectionSettings } from "../../src/platform/connections/config.ts";
import type { ConnectionRecord } from "../../src/platform/connections/model.ts";
import { type CredentialVault, RemoteServers } from "../../src/platform/connections/remote.ts";
import { NO_CALLER } from "../../src/workspace/access-check.ts";
import { connectionRecord } from "../helpers/connections.ts";

// A connection's server that echoes the credential it was sent, over the paths a member reads
// (adr/0155, amended 2026-12-07): progress reports, a token quoted without its auth scheme, a long
// result, and a credential too short to be looked for, which must garble nothing.
const TOKEN = "ghp_echoedSecretTokenValue0123456789";

/** The headers of the request the server is answering: `parsed` and `account` echo what arrived. */
let lastHeaders = new Headers();
let handler: McpHttpHandler;
let http: ServerType;
let url: URL;

beforeAll(async () => {
  handler = createMcpHandler(() => {
    const server = new McpServer({ name: "echoer", version: "1.0.0" });
    server.registerTool("tick", { description: "Reports progress." }, async (ctx) => {
      const progressToken = ctx.mcpReq._meta?.progressToken;
      if (progressToken !== undefined)
        await ctx.mcpReq.notify({
          method: "notifications/progress",
          params: { progressToken, progress: 1, message: `using key ${TOKEN}` },
        });
      return { content: [{ type: "text", text: "ticked" }] };
    });
    server.registerTool("whoami", { description: "Says the token it parsed." }, async () => ({
      content: [{ type: "text", text: `token ${TOKEN} lacks scope repo` }],
      isError: true,
    }));
    server.registerTool("parsed", { description: "Quotes the credential it parsed." }, async () => {
      const sent = lastHeaders.get("authorization") ?? lastHeaders.get("x-api-key") ?? "";
      const token = sent.includes(" ") ? sent.slice(sent.indexOf(" ") + 1) : sent;
      return { content: [{ type: "text", text: `token "${token}" lacks scope repo` }], isError: true };
    });
    server.registerTool("account", { description: "Echoes a numeric key as a number." }, async () => ({
      content: [{ type: "text", text: "see structured content" }],
      structuredContent: { account: Number(lastHeaders.get("x-api-key")) },
    }));
    server.registerTool("series", { description: "A long series." }, async () => ({
      content: [{ type: "text", text: "200000 points" }],
      structuredContent: { points: Array.from({ length: 200_000 }, () => 0) },
    }));
    server.registerTool("search", { description: "Searches the web." }, async () => ({
      content: [{ type: "text", text: "found" }],
    }));
    return server;
  });
  http = serve({
    fetch: (request) => {
      lastHeaders = new Headers(request.headers);
      return handler.fetch(request);
    },
    hostname: "127.0.0.1",
    port: 0,
  });
  await once(http, "listening");
  url = new URL(`http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`);
});

afterAll(async () => {
  await handler?.close();
  http?.close();
});

const SETTINGS = {
  allowPrivateAddresses: true,
  requestTimeoutMs: 10_000,
  maxResponseBytes: 16 * 1024 * 1024,
} as ConnectionSettings;
const caller = { principalId: "usr_x", workspaceId: "ws_x", access: NO_CALLER };

function servers(value: string) {
  const vault = { open: async () => value } as unknown as CredentialVault;
  return new RemoteServers(SETTINGS, vault, () => Date.now());
}

function record(header: string): ConnectionRecord {
  return connectionRecord("ws_0123456789abcdef", {
    name: "echoer",
    url: url.href,
    auth: { kind: "static", header, credential: "cred_x" } as ConnectionRecord["auth"],
  });
}

describe("a connection server that echoes its credential", () => {
  it("does not reach a member in a progress report's message", async () => {
    const source = await servers(TOKEN).source(record("x-api-key"));
    const reports: { message?: string }[] = [];
    try {
      await source.callTool("tick", {}, caller, { onProgress: (report) => void reports.push(report) });
    } finally {
      await source.close();
    }
    expect(reports).toHaveLength(1);
    expect(JSON.stringify(reports)).not.toContain(TOKEN);
  });

  it("does not reach a member when the header is 'authorization: Bearer <token>' and the server quotes the token", async () => {
    const source = await servers(`Bearer ${TOKEN}`).source(record("authorization"));
    try {
      const result = await source.callTool("whoami", {}, caller);
      expect(JSON.stringify(result)).not.toContain(TOKEN);
    } finally {
      await source.close();
    }
  });

  it("does not reach a member when the value was saved with a space around it, which fetch strips", async () => {
    for (const [header, value] of [
      ["x-api-key", ` ${TOKEN} `],
      ["authorization", `Bearer ${TOKEN} `],
    ] as const) {
      const source = await servers(value).source(record(header));
      try {
        const result = await source.callTool("parsed", {}, caller);
        expect(JSON.stringify(result)).toContain("[redacted]");
        expect(JSON.stringify(result)).not.toContain(TOKEN);
      } finally {
        await source.close();
      }
    }
  });

  it("does not reach a member when the header has an auth scheme other than Bearer ('Bot <token>')", async () => {
    const source = await servers(`Bot ${TOKEN}`).source(record("authorization"));
    try {
      const result = await source.callTool("parsed", {}, caller);
      expect(JSON.stringify(result)).toContain("[redacted]");
      expect(JSON.stringify(result)).not.toContain(TOKEN);
    } finally {
      await source.close();
    }
  });

  it("does not reach a member when an all-digit key is echoed as a JSON number", async () => {
    const source = await servers("4815162342108").source(record("x-api-key"));
    try {
      const result = await source.callTool("account", {}, caller);
      expect(result.structuredContent).toEqual({ account: "[redacted]" });
    } finally {
      await source.close();
    }
  });

  it("does not fail a result holding a long array", async () => {
    const source = await servers(TOKEN).source(record("x-api-key"));
    try {
      const result = await source.callTool("series", {}, caller);
      expect((result.structuredContent as { points: number[] }).points).toHaveLength(200_000);
    } finally {
      await source.close();
    }
  });

  it("a one-character credential does not rename the server's tools", async () => {
    const source = await servers("e").source(record("x-api-key"));
    try {
      const names = (await source.listTools()).map((tool) => tool.name).sort();
      expect(names).toEqual(["account", "parsed", "search", "series", "tick", "whoami"]);
    } finally {
      await source.close();
    }
  });
});
