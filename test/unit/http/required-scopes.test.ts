import type { Tool } from "@modelcontextprotocol/server";
import { describe, expect, it } from "vitest";
import { scopedCalls, requiredScopes as scopesOf } from "../../../src/http/mcp/required-scopes.ts";

const TOOLS: Record<string, Tool> = {
  files__read: { name: "files__read", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } },
  files__write: {
    name: "files__write",
    inputSchema: { type: "object" },
    annotations: { readOnlyHint: false },
  },
  remote__unhinted: { name: "remote__unhinted", inputSchema: { type: "object" } },
};
const find = async (name: string) => TOOLS[name];
const call = (name: string) => ({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name } });
const requiredScopes = async (body: unknown, findTool: typeof find) =>
  scopesOf(await scopedCalls(body, findTool));

describe("requiredScopes", () => {
  it("listing and other methods need mcp:read", async () => {
    expect(await requiredScopes({ jsonrpc: "2.0", id: 1, method: "tools/list" }, find)).toEqual(["mcp:read"]);
    expect(await requiredScopes({ jsonrpc: "2.0", id: 1, method: "initialize", params: {} }, find)).toEqual([
      "mcp:read",
    ]);
  });

  it("a read-only tool needs mcp:read; a writing, unhinted or unknown tool needs mcp:write", async () => {
    expect(await requiredScopes(call("files__read"), find)).toEqual(["mcp:read"]);
    expect(await requiredScopes(call("files__write"), find)).toEqual(["mcp:read", "mcp:write"]);
    expect(await requiredScopes(call("remote__unhinted"), find)).toEqual(["mcp:read", "mcp:write"]);
    expect(await requiredScopes(call("nope__nothing"), find)).toEqual(["mcp:read", "mcp:write"]);
  });

  it("a batch needs what its most demanding message needs", async () => {
    expect(await requiredScopes([call("files__read"), call("files__write")], find)).toContain("mcp:write");
  });
});
