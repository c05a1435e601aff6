import { describe, expect, it } from "vitest";
import { paramHeaderRefusal, paramHeadersOf } from "../../../../src/http/mcp/param-headers.ts";

// The rule of 2026-07-28 "Custom Headers from Tool Parameters" that the endpoint applies to a
// tools/call (test/integration/mcp-param-headers-of-connected-tools.test.ts over HTTP).

const SCHEMA = {
  type: "object",
  properties: {
    target: {
      type: "object",
      properties: { tenant: { type: "string", "x-mcp-header": "Tenant" } },
    },
    dryRun: { type: "boolean", "x-mcp-header": "Dry-Run" },
    // Not reached through `properties` alone, or not a field-name token: no header expected.
    items: { type: "array", items: { type: "string", "x-mcp-header": "Item" } },
    spaced: { type: "string", "x-mcp-header": "Has Space" },
  },
};

function headers(values: Record<string, string>) {
  return { get: (name: string) => values[name] ?? null };
}

describe("paramHeadersOf", () => {
  it("finds a declaration at any depth of `properties`, and none under items or with a name no header has", () => {
    expect(paramHeadersOf(SCHEMA).map(({ path, name }) => ({ path, name }))).toEqual([
      { path: ["target", "tenant"], name: "Tenant" },
      { path: ["dryRun"], name: "Dry-Run" },
    ]);
    expect(paramHeadersOf(undefined)).toEqual([]);
  });
});

describe("paramHeaderRefusal", () => {
  const declared = paramHeadersOf(SCHEMA);
  const args = { target: { tenant: "acme" }, dryRun: false };

  it("serves headers that carry each argument; a boolean as true or false", () => {
    expect(
      paramHeaderRefusal(
        declared,
        args,
        headers({ "mcp-param-tenant": "acme", "mcp-param-dry-run": "false" }),
      ),
    ).toBe(undefined);
  });

  it("refuses a nested argument whose header is absent, naming its path", () => {
    expect(paramHeaderRefusal(declared, args, headers({ "mcp-param-dry-run": "false" }))?.message).toBe(
      'the body carries arguments.target.tenant="acme" but the Mcp-Param-Tenant header is absent',
    );
  });

  it("compares the sentinel's markers exactly: an upper-case one is a plain value that disagrees", () => {
    const sent = headers({ "mcp-param-tenant": "=?BASE64?YWNtZQ==?=", "mcp-param-dry-run": "false" });
    expect(paramHeaderRefusal(declared, args, sent)?.header).toBe("=?BASE64?YWNtZQ==?=");
    const encoded = headers({ "mcp-param-tenant": "=?base64?YWNtZQ==?=", "mcp-param-dry-run": "false" });
    expect(paramHeaderRefusal(declared, args, encoded)).toBe(undefined);
  });
});
