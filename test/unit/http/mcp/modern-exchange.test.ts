import {
  classifyInboundRequest,
  type JSONRPCRequest,
  McpServer,
  PerRequestHTTPServerTransport,
  ProtocolError,
} from "@modelcontextprotocol/server";
import { afterEach, describe, expect, it, vi } from "vitest";
import { pinProtocolEra } from "../../../../src/http/mcp/era-pin.ts";
import { serveModernExchange } from "../../../../src/http/mcp/modern-exchange.ts";
import { RequestMuxTransport } from "../../../../src/http/mcp/request-mux-transport.ts";
import { modernMcpRequest } from "../../../helpers/mcp-request.ts";

// src/http/mcp/modern-exchange.ts opens the SDK's per-request transport only once an answer
// needs it, and replays a message that arrived during dispatch from inside the transport's own
// dispatch window (adr/0099). That rests on how the transport behaves, pinned here so an SDK
// update that changes it fails with this message rather than as a hung or mis-answered request.

function classified(method: string, params: Record<string, unknown> = {}) {
  const request = modernMcpRequest({ jsonrpc: "2.0", id: 7, method, params });
  const route = classifyInboundRequest({
    httpMethod: "POST",
    body: request.body,
    protocolVersionHeader: "2026-07-28",
    mcpMethodHeader: method,
  });
  if (route.kind !== "modern") throw new Error(`expected a 2026-07-28 request, got ${route.kind}`);
  return { message: route.message as JSONRPCRequest, classification: route.classification };
}

function modernPing(): { message: JSONRPCRequest; transport: PerRequestHTTPServerTransport } {
  const { message, classification } = classified("ping");
  return { message, transport: new PerRequestHTTPServerTransport({ classification }) };
}

/** A 2026-07-28 server behind a mux whose one tool call fails in its handler. */
async function failingCallServer(): Promise<RequestMuxTransport> {
  const mcp = new McpServer(
    { name: "t", version: "0" },
    { capabilities: { tools: {} }, supportedProtocolVersions: ["2026-07-28"] },
  );
  pinProtocolEra(mcp.server, "2026-07-28");
  mcp.server.setRequestHandler("tools/call", async () => {
    throw new ProtocolError(-32602, "No such tool.");
  });
  const mux = new RequestMuxTransport();
  await mcp.connect(mux);
  return mux;
}

/** An exchange whose client stays and whose caller stays admitted. */
const STAYS = { whenAbandoned: () => {}, stillAdmitted: () => true };

afterEach(() => vi.restoreAllMocks());

const METHOD_NOT_FOUND = {
  jsonrpc: "2.0",
  id: 7,
  error: { code: -32601, message: "Method not found" },
} as const;

describe("the SDK's PerRequestHTTPServerTransport, as the 2026 exchange relies on it", () => {
  it("is started by start()'s synchronous part and dispatches before handleMessage returns", async () => {
    const { message, transport } = modernPing();
    let dispatched = false;
    transport.onmessage = () => {
      dispatched = true;
    };
    void transport.start();
    const answered = transport.handleMessage(message);
    expect(dispatched).toBe(true);
    await transport.send({ jsonrpc: "2.0", id: 7, result: {} });
    expect(await (await answered).json()).toEqual({ jsonrpc: "2.0", id: 7, result: {} });
  });

  it("gives an error sent inside its dispatch the pre-handler status, and one sent after a handler's", async () => {
    const inside = modernPing();
    inside.transport.onmessage = () => void inside.transport.send(METHOD_NOT_FOUND);
    void inside.transport.start();
    expect((await inside.transport.handleMessage(inside.message)).status).toBe(404);

    const after = modernPing();
    after.transport.onmessage = () => {};
    void after.transport.start();
    const answered = after.transport.handleMessage(after.message);
    await after.transport.send(METHOD_NOT_FOUND);
    expect((await answered).status).toBe(200);
  });
});

describe("serveModernExchange", () => {
  it("answers a handler's error through the transport: 200 and the JSON-RPC error", async () => {
    const mux = await failingCallServer();
    const { message, classification } = classified("tools/call", { name: "missing", arguments: {} });
    const reply = await serveModernExchange(message, classification, undefined, mux, STAYS);
    if (reply.kind !== "web") throw new Error(`expected the transport's answer, got ${reply.kind}`);
    expect(reply.response.status).toBe(200);
    expect((await reply.response.json()).error).toMatchObject({ code: -32602, message: "No such tool." });
  });

  it("fails, rather than hang or answer 202, if the transport stops dispatching synchronously", async () => {
    const handle = PerRequestHTTPServerTransport.prototype.handleMessage;
    vi.spyOn(PerRequestHTTPServerTransport.prototype, "handleMessage").mockImplementation(async function (
      this: PerRequestHTTPServerTransport,
      ...args: Parameters<typeof handle>
    ) {
      await Promise.resolve();
      return handle.apply(this, args);
    });
    const mux = await failingCallServer();
    const { message, classification } = classified("tools/call", { name: "missing", arguments: {} });
    await expect(serveModernExchange(message, classification, undefined, mux, STAYS)).rejects.toThrow(
      /did not dispatch before handleMessage returned/,
    );
  });
});
