import { rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, capturingLogger, type TestAtrium } from "../helpers/atrium.ts";
import { startConnectionsAtrium } from "../helpers/connections-atrium.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { encodeMcpHeaderValue, modernMcpRequest } from "../helpers/mcp-request.ts";

// 2026-07-28 Streamable HTTP, "Custom Headers from Tool Parameters" (SEP-2243): a tool's
// inputSchema may mark a parameter `x-mcp-header: "Region"`; a conforming client then mirrors the
// argument into `Mcp-Param-Region`, and a server that processes the body MUST refuse (400 /
// -32020) a header that disagrees with the argument, or a call that carries the argument without
// the header. Atrium lists a connected server's tools verbatim, x-mcp-header included, so it
// checks those headers at the edge against the tool the call names (src/http/mcp/param-headers.ts,
// ADR 0029 amended); before, a call routed as eu-west went out to the remote server as us-east.

const time = new FakeTime(Date.now());
const captured = capturingLogger();
let instance: TestAtrium;
let ws: string;
let remote: Server;
const received: Array<Record<string, unknown>> = [];

const TOOL = {
  name: "query",
  description: "Runs a query in a region.",
  inputSchema: {
    type: "object",
    properties: {
      region: { type: "string", "x-mcp-header": "Region" },
      sql: { type: "string" },
      limit: { type: "integer", "x-mcp-header": "Limit" },
    },
    required: ["region", "sql"],
  },
};

/** A plain 2025-11-25 server with one tool: a modern probe gets an empty 400 and falls back. */
function startRemote(): Promise<URL> {
  remote = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => {
      body += chunk;
    });
    req.on("end", () => {
      const message = JSON.parse(body || "{}") as {
        id?: number;
        method?: string;
        params?: { _meta?: object };
      };
      const meta = message.params?._meta as Record<string, unknown> | undefined;
      if (meta && "io.modelcontextprotocol/protocolVersion" in meta) {
        res.writeHead(400).end();
        return;
      }
      const reply = (result: unknown) => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: message.id, result }));
      };
      if (message.id === undefined) {
        res.writeHead(202).end();
        return;
      }
      if (message.method === "initialize")
        return reply({
          protocolVersion: "2025-11-25",
          capabilities: { tools: {} },
          serverInfo: { name: "regions", version: "1.0.0" },
        });
      if (message.method === "tools/list") return reply({ tools: [TOOL] });
      if (message.method === "tools/call") {
        received.push(message.params as Record<string, unknown>);
        return reply({ content: [{ type: "text", text: "ran" }] });
      }
      if (message.method === "ping") return reply({});
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          jsonrpc: "2.0",
          id: message.id,
          error: { code: -32601, message: "Method not found" },
        }),
      );
    });
  });
  return new Promise((resolve) => {
    remote.listen(0, "127.0.0.1", () => {
      resolve(new URL(`http://127.0.0.1:${(remote.address() as AddressInfo).port}/mcp`));
    });
  });
}

beforeAll(async () => {
  const url = await startRemote();
  instance = await startConnectionsAtrium("rv57-mcp-param", time, captured.log);
  ws = await bootstrapWorkspace(instance, "alice");
  const added = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/connections`, {
    name: "regions",
    url: url.href,
    auth: { kind: "none" },
  });
  expect(added.status).toBe(201);
}, 60_000);

afterAll(async () => {
  await instance?.stop();
  if (instance) await rm(instance.dir, { recursive: true, force: true });
  await new Promise((resolve) => remote?.close(resolve));
});

/** The parts of a JSON-RPC answer these tests read. */
interface RpcAnswer {
  result: { tools: Array<{ name: string; inputSchema: JsonSchema }>; content: unknown };
  error?: { code: number; message: string };
}

interface JsonSchema {
  properties: Record<string, Record<string, unknown>>;
}

async function post(request: { headers: Record<string, string>; body: unknown }) {
  const response = await instance.raw("alice", "POST", `/mcp/${ws}`, {
    headers: request.headers,
    body: JSON.stringify(request.body),
  });
  return { status: response.status, body: JSON.parse(response.text) as RpcAnswer };
}

describe("Mcp-Param-* headers of a connected tool's x-mcp-header parameters", () => {
  it("the connected tool is listed to a 2026 client with its x-mcp-header (precondition)", async () => {
    const listed = await post(modernMcpRequest({ jsonrpc: "2.0", id: 1, method: "tools/list" }));
    const tool = listed.body.result.tools.find((t) => t.name === "regions__query");
    expect(tool?.inputSchema.properties.region?.["x-mcp-header"]).toBe("Region");
  });

  it("a Mcp-Param-Region that disagrees with arguments.region is refused 400 / -32020, and nothing is called", async () => {
    const request = modernMcpRequest({
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "regions__query", arguments: { region: "us-east", sql: "select 1" } },
    });
    const before = received.length;
    const answer = await post({
      ...request,
      headers: { ...request.headers, "mcp-param-region": encodeMcpHeaderValue("eu-west") },
    });
    expect({
      status: answer.status,
      code: answer.body.error?.code,
      called: received.length - before,
    }).toEqual({
      status: 400,
      code: -32020,
      called: 0,
    });
  });

  it("a call that carries arguments.region but no Mcp-Param-Region is refused 400 / -32020", async () => {
    const request = modernMcpRequest({
      jsonrpc: "2.0",
      id: 3,
      method: "tools/call",
      params: { name: "regions__query", arguments: { region: "us-east", sql: "select 1" } },
    });
    const answer = await post(request);
    expect({ status: answer.status, code: answer.body.error?.code }).toEqual({ status: 400, code: -32020 });
  });

  it("a call whose headers carry each argument is served, a non-ASCII one in the =?base64?…?= form, an integer as its number", async () => {
    const request = modernMcpRequest({
      jsonrpc: "2.0",
      id: 4,
      method: "tools/call",
      params: { name: "regions__query", arguments: { region: "Zürich", sql: "select 1", limit: 42 } },
    });
    const before = received.length;
    const answer = await post({
      ...request,
      headers: {
        ...request.headers,
        "mcp-param-region": encodeMcpHeaderValue("Zürich"),
        "mcp-param-limit": "42.0",
      },
    });
    expect(answer.status).toBe(200);
    expect(answer.body.result.content).toEqual([{ type: "text", text: "ran" }]);
    expect(received.slice(before).map((params) => params.arguments)).toEqual([
      { region: "Zürich", sql: "select 1", limit: 42 },
    ]);
  });

  it("an argument that is absent or null expects no header", async () => {
    const request = modernMcpRequest({
      jsonrpc: "2.0",
      id: 5,
      method: "tools/call",
      params: { name: "regions__query", arguments: { region: null, sql: "select 1" } },
    });
    const answer = await post(request);
    expect(answer.status).toBe(200);
    expect(answer.body.error).toBeUndefined();
  });

  it("a sentinel that wraps no canonical Base64 is refused 400 / -32020 naming the header", async () => {
    const request = modernMcpRequest({
      jsonrpc: "2.0",
      id: 6,
      method: "tools/call",
      params: { name: "regions__query", arguments: { region: "us-east", sql: "select 1" } },
    });
    const answer = await post({
      ...request,
      headers: { ...request.headers, "mcp-param-region": "=?base64?dXMtZWFzd?=" },
    });
    expect({ status: answer.status, code: answer.body.error?.code }).toEqual({ status: 400, code: -32020 });
    expect(answer.body.error?.message).toMatch(/Mcp-Param-Region header carries an invalid/);
  });
});
