import { describe, expect, it } from "vitest";
import { openingMethod, rpcRequest } from "../../../bench/lib/rpc-request.ts";

const url = "http://127.0.0.1:1/mcp";

describe("the requests the bench loads", () => {
  it("a 2025 initialize carries the version, capabilities and client a client opens with", () => {
    const request = rpcRequest({ url, method: openingMethod("2025-11-25") }, "2025-11-25");
    const body = JSON.parse(request.body);
    expect(body.method).toBe("initialize");
    expect(body.params).toEqual({
      protocolVersion: "2025-11-25",
      capabilities: {},
      clientInfo: { name: "atrium-bench", version: "0.0.0" },
    });
    expect(request.headers["mcp-method"]).toBeUndefined();
  });

  it("a 2026 request carries the _meta envelope and names its method, and a tool call its tool", () => {
    const discover = rpcRequest({ url, method: openingMethod("2026-07-28") }, "2026-07-28");
    expect(JSON.parse(discover.body).params._meta["io.modelcontextprotocol/protocolVersion"]).toBe(
      "2026-07-28",
    );
    expect(discover.headers["mcp-method"]).toBe("server/discover");
    expect(discover.headers["mcp-name"]).toBeUndefined();
    const call = rpcRequest(
      { url, method: "tools/call", params: { name: "files__info", arguments: {} } },
      "2026-07-28",
    );
    expect(call.headers["mcp-name"]).toBe("files__info");
  });

  it("a 2025 ping has no params, and a credential rides on the request", () => {
    const ping = rpcRequest({ url, method: "ping", headers: { authorization: "Bearer t" } }, "2025-11-25");
    expect(JSON.parse(ping.body)).toEqual({ jsonrpc: "2.0", id: 1, method: "ping" });
    expect(ping.headers.authorization).toBe("Bearer t");
  });
});
