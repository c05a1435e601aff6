import { JSONRPCErrorResponseSchema, JSONRPCResultResponseSchema } from "@modelcontextprotocol/core";
import { isJSONRPCErrorResponse, isJSONRPCResultResponse } from "@modelcontextprotocol/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as z from "zod";
import { shortCircuitResponseChecks } from "../../../../src/http/mcp/response-checks.ts";
import { startTestAtrium, type TestAtrium } from "../../../helpers/atrium.ts";

type Parse = (value: unknown) => { success: boolean; error?: { issues: unknown[] } };

const SCHEMAS = {
  result: JSONRPCResultResponseSchema as unknown as { safeParse: Parse },
  error: JSONRPCErrorResponseSchema as unknown as { safeParse: Parse },
};

/** zod's own parse of `schema`, whatever has been set on the instance. */
function zodParse(schema: { safeParse: Parse }, value: unknown): ReturnType<Parse> {
  return z.safeParse(schema as unknown as z.ZodType, value);
}

// Every kind of message the SDK classifies, and values that come close to a response.
const MESSAGES: unknown[] = [
  { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "files__info", arguments: {} } },
  { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 1 } },
  { jsonrpc: "2.0", id: 1, result: {} },
  { jsonrpc: "2.0", id: "a", result: { content: [], _meta: { x: 1 } } },
  { jsonrpc: "2.0", id: 1, error: { code: -32601, message: "Method not found" } },
  { jsonrpc: "2.0", error: { code: -32700, message: "Parse error", data: "x" } },
  { jsonrpc: "2.0", id: 1, result: {}, method: "ping" },
  { jsonrpc: "2.0", id: 1, result: undefined },
  { jsonrpc: "2.0", id: 1, result: null },
  { jsonrpc: "2.0", id: 1, error: null },
  { jsonrpc: "2.0", id: 1, error: { code: 1.5, message: "not an integer" } },
  { jsonrpc: "1.0", id: 1, result: {} },
  { id: 1, result: {} },
  [{ jsonrpc: "2.0", id: 1, result: {} }],
  null,
  undefined,
  "result",
  42,
  {},
];

describe("a running Atrium", () => {
  let instance: TestAtrium;
  beforeAll(async () => {
    // Whatever an earlier test in this worker installed is taken away first: zod's own again.
    for (const schema of Object.values(SCHEMAS)) Reflect.deleteProperty(schema, "safeParse");
    instance = await startTestAtrium();
  });
  afterAll(() => instance.stop());

  it("has short-circuited the response checks as it started", () => {
    for (const schema of Object.values(SCHEMAS)) expect(Object.hasOwn(schema, "safeParse")).toBe(true);
  });
});

describe("the short-circuited response checks", () => {
  beforeAll(() => shortCircuitResponseChecks());

  it("answer every message as zod does, the failures' issues included", () => {
    for (const [member, schema] of Object.entries(SCHEMAS)) {
      for (const message of MESSAGES) {
        const expected = zodParse(schema, message);
        const actual = schema.safeParse(message);
        const context = `${member} of ${JSON.stringify(message)}`;
        expect(actual.success, context).toBe(expected.success);
        expect(actual.error?.issues, context).toEqual(expected.error?.issues);
      }
    }
  });

  it("tell a request apart from a response without running the schema", () => {
    for (const [member, schema] of Object.entries(SCHEMAS)) {
      const zod = (schema as unknown as { _zod: { run: (...args: unknown[]) => unknown } })._zod;
      const run = zod.run;
      const ran: unknown[] = [];
      zod.run = (...args) => {
        ran.push(args[0]);
        return run(...args);
      };
      try {
        expect(schema.safeParse(MESSAGES[0]).success).toBe(false);
        expect(ran, member).toEqual([]);
        // The spy sees a parse that has to run: one of a message that has the member.
        schema.safeParse({ jsonrpc: "2.0", id: 1, [member]: {} });
        expect(ran, member).toHaveLength(1);
      } finally {
        zod.run = run;
      }
    }
  });

  it("are the very checks the SDK's classifier and receiver make", () => {
    // The SDK imports the schemas from its core package; if a release bundled its own copies,
    // the shortcut would no longer reach it and this test says so.
    for (const [schema, check] of [
      [SCHEMAS.result, isJSONRPCResultResponse],
      [SCHEMAS.error, isJSONRPCErrorResponse],
    ] as const) {
      const seen: unknown[] = [];
      const installed = schema.safeParse;
      schema.safeParse = (value) => {
        seen.push(value);
        return installed(value);
      };
      try {
        check(MESSAGES[0]);
      } finally {
        schema.safeParse = installed;
      }
      expect(seen).toEqual([MESSAGES[0]]);
    }
  });

  it("are installed once however often they are asked for", () => {
    const installed = SCHEMAS.result.safeParse;
    shortCircuitResponseChecks();
    expect(SCHEMAS.result.safeParse).toBe(installed);
  });
});
