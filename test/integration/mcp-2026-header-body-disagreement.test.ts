import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, MCP_POST_HEADERS, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { modernMcpRequest } from "../helpers/mcp-request.ts";

// docs/mcp.md: "A header that is missing or disagrees with the body answers 400 with JSON-RPC
// -32020" (2026-07-28 Streamable HTTP, Server Validation: the MCP-Protocol-Version header MUST
// match the body's io.modelcontextprotocol/protocolVersion, and a required header that is
// missing or malformed is a HeaderMismatch). Two disagreements were answered with other codes
// (src/http/mcp/endpoint.ts): a 2026-07-28 header on a body with no envelope got the SDK
// classifier's -32602 for the missing _meta, and an empty header on a 2026 body got -32022
// naming the version "" — which tells a client to retry with the version it already sent.

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

describe("a 2026-07-28 header that disagrees with the body is -32020", () => {
  it("MCP-Protocol-Version: 2026-07-28 on a body without the envelope", async () => {
    const answer = await post(
      { ...MCP_POST_HEADERS, "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list" },
      { jsonrpc: "2.0", id: 1, method: "tools/list" },
    );
    expect(answer).toEqual({ status: 400, code: -32020 });
  });

  it("an empty MCP-Protocol-Version on a 2026 body (a malformed required header)", async () => {
    const request = modernMcpRequest({ jsonrpc: "2.0", id: 2, method: "tools/list" });
    const answer = await post({ ...request.headers, "mcp-protocol-version": "" }, request.body);
    expect(answer).toEqual({ status: 400, code: -32020 });
  });
});
