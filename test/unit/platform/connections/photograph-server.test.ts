import { describe, expect, it } from "vitest";
import { InvalidInput } from "../../../../src/errors.ts";
import { photographServer } from "../../../../src/platform/connections/photograph-server.ts";
import type { RemoteServers } from "../../../../src/platform/connections/remote.ts";
import { connectionRecord } from "../../../helpers/connections.ts";

// A record stored before query credentials were refused (ADR 0108) may hold one in its URL: the
// refusals a photograph answers (an admin's refresh, a member's view of its failure) show the URL
// as every view does, its value redacted.

const SECRET = "sk-legacy-query-value";

describe("a photograph's refusal", () => {
  it.each([
    ["a connect that fails", { describe: async () => Promise.reject(new Error("ECONNREFUSED")) }],
    ["a server without tools", { describe: async () => ({ hasTools: false }) }],
  ])("names the URL without a query credential's value: %s", async (_, source) => {
    const remote = {
      source: async () => ({ ...source, close: async () => undefined }),
    } as unknown as RemoteServers;
    const record = connectionRecord("ws_0123456789abcdef", {
      url: `https://mcp.example.com/mcp?api_key=${SECRET}`,
    });
    const refusal = await photographServer(remote, () => 0, record, 1).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(InvalidInput);
    expect((refusal as Error).message).toContain("https://mcp.example.com/mcp?api_key=redacted");
    expect((refusal as Error).message).not.toContain(SECRET);
  });
});
