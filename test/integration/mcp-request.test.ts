import type { AddressInfo } from "node:net";
import { type ServerType, serve } from "@hono/node-server";
import { createMcpHandler, McpServer, ResourceTemplate } from "@modelcontextprotocol/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { MCP_POST_HEADERS } from "../helpers/atrium.ts";
import {
  encodeMcpHeaderValue,
  type JsonRpcMessage,
  type McpHttpRequest,
  mcpRequest,
  modernMcpRequest,
  readMcpMessage,
} from "../helpers/mcp-request.ts";

// test/helpers/mcp-request.ts builds the raw 2026-07-28 requests Atrium's own tests post. Here
// they go to the SDK's own 2026-07-28 server (createMcpHandler), so what the helper builds is
// what the SDK's header and envelope checks accept, not what Atrium happens to tolerate.

const ACCENTED_URI = "mem://notes/café";

let server: ServerType;
let url: string;

beforeAll(async () => {
  const handler = createMcpHandler(() => {
    const mcp = new McpServer({ name: "reference", version: "0.0.0" });
    mcp.registerTool("echo", { inputSchema: z.object({ text: z.string() }) }, async ({ text }) => ({
      content: [{ type: "text", text }],
    }));
    // A template, so the read matches however the URL parser spells "é".
    mcp.registerResource(
      "notes",
      new ResourceTemplate("mem://notes/{name}", { list: undefined }),
      {},
      async () => ({
        contents: [{ uri: ACCENTED_URI, text: "read" }],
      }),
    );
    return mcp;
  });
  await new Promise<void>((resolve) => {
    server = serve({ fetch: (request) => handler.fetch(request), hostname: "127.0.0.1", port: 0 }, () =>
      resolve(),
    );
  });
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
});

/** POSTs `request`; the JSON-RPC answer, if the status carries one (a notification's 202 does not). */
async function send({
  headers,
  body,
}: McpHttpRequest): Promise<{ status: number; message?: Record<string, unknown> }> {
  const response = await fetch(url, { method: "POST", headers, body: JSON.stringify(body) });
  if (response.status === 202) return { status: response.status };
  return { status: response.status, message: await readMcpMessage(response) };
}

const request = (method: string, params?: Record<string, unknown>): JsonRpcMessage => ({
  jsonrpc: "2.0",
  id: 1,
  method,
  ...(params === undefined ? {} : { params }),
});

describe("a 2026-07-28 request built by modernMcpRequest", () => {
  it("is served by the SDK's 2026 leg: tools/list", async () => {
    const { status, message } = await send(modernMcpRequest(request("tools/list")));
    expect(status).toBe(200);
    const result = message?.result as { tools: Array<{ name: string }>; resultType?: string };
    expect(result.tools.map((tool) => tool.name)).toEqual(["echo"]);
    expect(result.resultType).toBe("complete");
  });

  it("carries the envelope and headers the SDK client sends", () => {
    const { headers, body } = modernMcpRequest(
      request("tools/call", { name: "echo", arguments: { text: "x" } }),
    );
    expect(headers).toEqual({
      ...MCP_POST_HEADERS,
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": "tools/call",
      "mcp-name": "echo",
    });
    expect(body.params?._meta).toEqual({
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientCapabilities": {},
      "io.modelcontextprotocol/clientInfo": { name: "atrium-raw-test", version: "0.0.0" },
    });
  });

  it("names the tool in Mcp-Name: tools/call", async () => {
    const { status, message } = await send(
      modernMcpRequest(request("tools/call", { name: "echo", arguments: { text: "hello" } })),
    );
    expect(status).toBe(200);
    expect(message?.result).toMatchObject({ content: [{ type: "text", text: "hello" }] });
  });

  it("encodes a non-ASCII uri in Mcp-Name so the SDK decodes it to the body's: resources/read", async () => {
    const built = modernMcpRequest(request("resources/read", { uri: ACCENTED_URI }));
    expect(built.headers["mcp-name"]).toMatch(/^=\?base64\?.+\?=$/);
    const { status, message } = await send(built);
    expect(status).toBe(200);
    expect(message?.result).toMatchObject({ contents: [{ uri: ACCENTED_URI, text: "read" }] });
  });

  it("keeps the message's own _meta keys beside the envelope, and lets them override it", () => {
    const { body } = modernMcpRequest(
      request("tools/list", {
        _meta: { progressToken: 3, "io.modelcontextprotocol/protocolVersion": "2099-01-01" },
      }),
    );
    expect(body.params?._meta).toMatchObject({
      progressToken: 3,
      "io.modelcontextprotocol/protocolVersion": "2099-01-01",
      "io.modelcontextprotocol/clientCapabilities": {},
    });
  });

  it("a notification gets the version header only and is accepted", async () => {
    const built = modernMcpRequest({
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: 9 },
    });
    expect(built.headers["mcp-method"]).toBeUndefined();
    expect(built.headers["mcp-protocol-version"]).toBe("2026-07-28");
    expect((await send(built)).status).toBe(202);
  });
});

describe("a built request with one header overridden is what the SDK refuses", () => {
  it.each([
    ["Mcp-Method naming another method", { "mcp-method": "tools/list" }],
    ["Mcp-Name naming another tool", { "mcp-name": "other" }],
    ["MCP-Protocol-Version naming another revision", { "mcp-protocol-version": "2025-11-25" }],
  ])("%s: 400 with -32020", async (_label, override) => {
    const built = modernMcpRequest(request("tools/call", { name: "echo", arguments: { text: "x" } }));
    const { status, message } = await send({ ...built, headers: { ...built.headers, ...override } });
    expect(status).toBe(400);
    expect(message?.error).toMatchObject({ code: -32020 });
  });

  it("without Mcp-Method: 400 with -32020", async () => {
    const built = modernMcpRequest(request("tools/list"));
    const { "mcp-method": _dropped, ...headers } = built.headers;
    const { status, message } = await send({ ...built, headers });
    expect(status).toBe(400);
    expect(message?.error).toMatchObject({ code: -32020 });
  });
});

describe("mcpRequest", () => {
  it("leaves a 2025-11-25 message as it is, with the Streamable HTTP headers only", () => {
    const message = request("tools/list");
    expect(mcpRequest("2025-11-25", message)).toEqual({ headers: { ...MCP_POST_HEADERS }, body: message });
  });

  it("envelopes a 2026-07-28 message", () => {
    const message = request("tools/list");
    expect(mcpRequest("2026-07-28", message)).toEqual(modernMcpRequest(message));
  });
});

describe("encodeMcpHeaderValue", () => {
  it.each([
    ["files__info", "files__info"],
    ["skill://workspace/a b", "skill://workspace/a b"],
    ["café", `=?base64?${Buffer.from("café").toString("base64")}?=`],
    [" padded", `=?base64?${Buffer.from(" padded").toString("base64")}?=`],
    ["", "=?base64??="],
    ["=?base64?eA==?=", `=?base64?${Buffer.from("=?base64?eA==?=").toString("base64")}?=`],
  ])("%j is sent as %j", (value, sent) => {
    expect(encodeMcpHeaderValue(value)).toBe(sent);
  });
});

describe("readMcpMessage", () => {
  const headers = (type: string) => ({ "content-type": type });

  it("reads a JSON body", async () => {
    const response = new Response('{"jsonrpc":"2.0","id":1,"result":{}}', {
      headers: headers("application/json"),
    });
    expect(await readMcpMessage(response)).toEqual({ jsonrpc: "2.0", id: 1, result: {} });
  });

  it("reads the response after a stream's notifications", async () => {
    const stream = [
      'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}\n',
      'event: message\ndata: {"jsonrpc":"2.0","id":1,"result":{"done":true}}\n',
      "",
    ].join("\n");
    const response = new Response(stream, { headers: headers("text/event-stream") });
    expect(await readMcpMessage(response)).toEqual({ jsonrpc: "2.0", id: 1, result: { done: true } });
  });

  it("says what came instead of a message", async () => {
    const response = new Response("", { status: 500, headers: headers("text/event-stream") });
    await expect(readMcpMessage(response)).rejects.toThrow(/HTTP 500 carried no JSON-RPC message/);
  });
});
