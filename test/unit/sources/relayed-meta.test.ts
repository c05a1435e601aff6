import type { CallToolResult } from "@modelcontextprotocol/client";
import { describe, expect, it } from "vitest";
import { isReservedMetaKey, withRelayableMeta } from "../../../src/sources/relayed-meta.ts";

describe("a _meta key MCP reserves", () => {
  it.each([
    "io.modelcontextprotocol/serverInfo",
    "io.modelcontextprotocol/related-task",
    "dev.mcp/x",
    "org.modelcontextprotocol.api/x",
    "com.mcp.tools/x",
    // 2025-06-18's examples: such a label followed by another.
    "modelcontextprotocol.io/x",
    "mcp.dev/x",
    "api.modelcontextprotocol.org/x",
    "tools.mcp.com/x",
  ])("%s is reserved", (key) => {
    expect(isReservedMetaKey(key)).toBe(true);
  });

  it.each([
    "com.example.mcp/x",
    "com.example/serverInfo",
    "progressToken",
    "mcp/x",
    "io.example/modelcontextprotocol",
  ])("%s is not", (key) => {
    expect(isReservedMetaKey(key)).toBe(false);
  });
});

describe("a remote result's _meta as Atrium relays it", () => {
  it("drops reserved and host-owned keys, keeping the server's own", () => {
    const result: CallToolResult = {
      content: [],
      _meta: {
        "io.modelcontextprotocol/serverInfo": { name: "numbers", version: "1.0.0" },
        "dev.atrium/unexpected": { type: "Error", message: "/etc/passwd" },
        "com.example/trace": "t-1",
        progressToken: 3,
      },
    };
    expect(withRelayableMeta(result)._meta).toEqual({ "com.example/trace": "t-1", progressToken: 3 });
  });

  it("returns a result with nothing to drop as it is", () => {
    const result: CallToolResult = { content: [], _meta: { "com.example/trace": "t-1" } };
    expect(withRelayableMeta(result)).toBe(result);
  });
});
