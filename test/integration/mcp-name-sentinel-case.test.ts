import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { modernMcpRequest } from "../helpers/mcp-request.ts";

// Streamable HTTP 2026-07-28, "Value Encoding": the `=?base64?` prefix and `?=` suffix "are
// case-sensitive and MUST appear exactly as shown (lowercase)". A value that does not start with
// the lowercase prefix is a plain value, compared as it stands (src/http/mcp/standard-headers.ts).
// Decoding `=?BASE64?…?=` would let Atrium run the tool the body names while a conforming
// intermediary routed on the literal header: the disagreement -32020 exists to stop.

let instance: TestAtrium;
let ws: string;

beforeAll(async () => {
  instance = await startTestAtrium();
  ws = await bootstrapWorkspace(instance, "alice");
});
afterAll(async () => {
  await instance?.stop();
});

function b64(value: string): string {
  return Buffer.from(value, "utf8").toString("base64");
}

describe("Mcp-Name's base64 sentinel is lowercase only", () => {
  it("an upper-case =?BASE64?…?= Mcp-Name is not decoded, so it disagrees with params.name (400, -32020)", async () => {
    const request = modernMcpRequest({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "files__list", arguments: {} },
    });
    const headers = { ...request.headers, "mcp-name": `=?BASE64?${b64("files__list")}?=` };
    const response = await instance.raw("alice", "POST", `/mcp/${ws}`, {
      headers,
      body: JSON.stringify(request.body),
    });
    expect(response.status).toBe(400);
    expect(JSON.parse(response.text)).toMatchObject({
      error: { code: -32020, message: expect.stringContaining(`names "=?BASE64?${b64("files__list")}?="`) },
    });
  });

  it("the same for resources/read's Mcp-Name (mixed-case prefix)", async () => {
    const uri = "skill://platform/using-atrium-files";
    const request = modernMcpRequest({ jsonrpc: "2.0", id: 2, method: "resources/read", params: { uri } });
    const headers = { ...request.headers, "mcp-name": `=?Base64?${b64(uri)}?=` };
    const response = await instance.raw("alice", "POST", `/mcp/${ws}`, {
      headers,
      body: JSON.stringify(request.body),
    });
    expect(response.status).toBe(400);
    expect(JSON.parse(response.text)).toMatchObject({ error: { code: -32020 } });
  });

  it("control: the lowercase sentinel is decoded and accepted", async () => {
    const request = modernMcpRequest({
      jsonrpc: "2.0",
      id: 3,
      method: "tools/call",
      params: { name: "files__list", arguments: {} },
    });
    const headers = { ...request.headers, "mcp-name": `=?base64?${b64("files__list")}?=` };
    const response = await instance.raw("alice", "POST", `/mcp/${ws}`, {
      headers,
      body: JSON.stringify(request.body),
    });
    expect(response.status).toBe(200);
  });
});
