import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, MCP_POST_HEADERS, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { modernMcpRequest } from "../helpers/mcp-request.ts";

// docs/mcp.md: a required 2026-07-28 header that is missing, malformed or disagrees with the body
// answers 400 with JSON-RPC -32020 (Streamable HTTP, Server Validation); an empty header on a 2026
// body got -32022 naming the version "", which tells a client to retry with the version it sent.
// A body that lacks the envelope (or its protocol version) under a 2026 header is invalid params,
// -32602, as the conformance suite's SEP-2575 scenarios require: the body is what is wrong.

let instance: TestAtrium;
let ws: string;

beforeAll(async () => {
  instance = await startTestAtrium();
  ws = await bootstrapWorkspace(instance, "alice");
});
afterAll(async () => {
  await instance?.stop();
});

async function post(headers: Record<string, string>, body: unknown) {
  const response = await instance.raw("alice", "POST", `/mcp/${ws}`, { headers, body: JSON.stringify(body) });
  return {
    status: response.status,
    code: (JSON.parse(response.text) as { error?: { code: number } }).error?.code,
  };
}

describe("a 2026-07-28 request whose header and body do not agree", () => {
  it("MCP-Protocol-Version: 2026-07-28 on a body without the envelope is -32602 (SEP-2575)", async () => {
    const answer = await post(
      { ...MCP_POST_HEADERS, "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list" },
      { jsonrpc: "2.0", id: 1, method: "tools/list" },
    );
    expect(answer).toEqual({ status: 400, code: -32602 });
  });

  it("an empty MCP-Protocol-Version on a 2026 body (a malformed required header) is -32020", async () => {
    const request = modernMcpRequest({ jsonrpc: "2.0", id: 2, method: "tools/list" });
    const answer = await post({ ...request.headers, "mcp-protocol-version": "" }, request.body);
    expect(answer).toEqual({ status: 400, code: -32020 });
  });
});
