import { Client, type Tool } from "@modelcontextprotocol/client";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ConnectionSettings } from "../../../../src/platform/connections/config.ts";
import { RemoteServers } from "../../../../src/platform/connections/remote.ts";
import { compileInputSchema, remoteOutputValidator } from "../../../../src/platform/connections/schemas.ts";
import { connectionRecord } from "../../../helpers/connections.ts";

afterEach(() => vi.restoreAllMocks());

const tool = (inputSchema: Record<string, unknown>) => ({ name: "t", inputSchema }) as Tool;

describe("a remote tool's input schema", () => {
  it("matches patterns with RE2: a long near-match of a nested quantifier is answered, and rightly", () => {
    const validate = compileInputSchema(
      tool({ type: "object", properties: { a: { type: "string", pattern: "^(a+)+$" } } }),
    );
    expect(validate({ a: `${"a".repeat(50_000)}!` })).toBe(false);
    expect(validate({ a: "a".repeat(50_000) })).toBe(true);
  });

  it("leaves a pattern RE2 cannot match unchecked, and checks the rest of the schema", () => {
    const schema = {
      type: "object",
      properties: {
        password: { type: "string", pattern: "^(?=.*\\d).{8,}$", minLength: 8 },
        code: { type: "string", pattern: "^[A-Z]{3}$" },
      },
      required: ["password"],
    };
    const validate = compileInputSchema(tool(schema));
    expect(validate({ password: "no digits here" })).toBe(true);
    expect(validate({ password: "short" })).toBe(false);
    expect(validate({ password: "long enough", code: "abc" })).toBe(false);
    expect(validate({})).toBe(false);
    // The snapshot's own schema, which its digest is over, is left as the server listed it.
    expect(schema.properties.password.pattern).toBe("^(?=.*\\d).{8,}$");
  });

  it("refuses a patternProperties key RE2 cannot match, naming it", () => {
    expect(() =>
      compileInputSchema(tool({ type: "object", patternProperties: { "^(?!x)": { type: "number" } } })),
    ).toThrow('the pattern "^(?!x)" cannot be matched in linear time');
  });

  it("refuses a schema that applies itself to the same value without end, saying where", () => {
    expect(() => compileInputSchema(tool({ $ref: "#" }))).toThrow('it applies the schema at "#"');
    expect(compileInputSchema(tool({ type: "object", properties: { child: { $ref: "#" } } }))({})).toBe(true);
  });

  it('does not check ajv-formats\' "url", whose fixed RegExp backtracks, and checks "uri"', () => {
    const validate = compileInputSchema(
      tool({ type: "object", properties: { u: { type: "string", format: "url" }, i: { format: "uri" } } }),
    );
    expect(validate({ u: `http://${":".repeat(100_000)}` })).toBe(true);
    expect(validate({ i: "not a uri" })).toBe(false);
  });

  it("compiles each schema on its own: a refreshed tool with the same $id compiles again", () => {
    const listed = () => tool({ $id: "https://remote.example/t.json", type: "object", required: ["q"] });
    expect(compileInputSchema(listed())({})).toBe(false);
    expect(compileInputSchema(listed())({ q: 1 })).toBe(true);
  });

  it("compiles each $ref once: a definition named from many places is not copied into each", () => {
    const properties = Object.fromEntries(
      Array.from({ length: 60 }, (_, n) => [`p${n}`, { type: "string" }]),
    );
    const schema = {
      type: "object",
      $defs: { d: { properties } },
      allOf: Array.from({ length: 60 }, () => ({ $ref: "#/$defs/d" })),
    };
    const validate = compileInputSchema(tool(schema));
    expect(validate.toString().length).toBeLessThan(10 * JSON.stringify(schema).length);
    expect(validate({ p59: 1 })).toBe(false);
  });

  it("checks a decimal multipleOf to 9 places: 0.3 is a multiple of 0.1, 0.35 is not", () => {
    const validate = compileInputSchema(
      tool({ type: "object", properties: { n: { type: "number", multipleOf: 0.1 } } }),
    );
    expect(validate({ n: 0.3 })).toBe(true);
    expect(validate({ n: 0.35 })).toBe(false);
  });
});

describe("a remote tool's asynchronous schema ($async)", () => {
  it("is refused, for arguments and for results: its check would answer a promise", () => {
    const schema = { $async: true, type: "object", properties: { y: { type: "string", pattern: "^b" } } };
    expect(() => compileInputSchema(tool(schema))).toThrow(/asynchronous schema/);
    expect(() => remoteOutputValidator.getValidator(schema)).toThrow(/asynchronous schema/);
  });
});

describe("a remote tool's output schema, as the SDK client checks a structured result with it", () => {
  it("matches with RE2, leaves out a pattern RE2 cannot match, and names only places in the schema", () => {
    const check = remoteOutputValidator.getValidator<{ s: string; code?: string }>({
      type: "object",
      properties: { s: { type: "string", pattern: "^(a+)+$" }, code: { type: "string", pattern: "^(?=x)" } },
      required: ["s"],
    });
    expect(check({ s: `${"a".repeat(50_000)}!` })).toEqual({
      valid: false,
      data: undefined,
      errorMessage: '#/properties/s/pattern must match pattern "^(a+)+$"',
    });
    expect(check({ s: "aaa", code: "not x" })).toEqual({
      valid: true,
      data: { s: "aaa", code: "not x" },
      errorMessage: undefined,
    });
  });

  it("refuses a structured result by its first failure, however many items fail", () => {
    const check = remoteOutputValidator.getValidator<{ rows: string[] }>({
      type: "object",
      properties: { rows: { type: "array", items: { type: "string" } }, total: { type: "number" } },
    });
    expect(check({ rows: new Array(50_000).fill(0), total: "many" })).toEqual({
      valid: false,
      data: undefined,
      errorMessage: "#/properties/rows/items/type must be string",
    });
  });

  it("is the validator every remote connection's SDK client is made with", async () => {
    // The SDK keeps it in a private field; read there, so an SDK update that renames it fails here.
    let made: unknown;
    vi.spyOn(Client.prototype, "connect").mockImplementation(async function (this: Client) {
      made = (this as unknown as { _jsonSchemaValidator: unknown })._jsonSchemaValidator;
      throw new Error("not connecting in a unit test");
    });
    const settings = { allowPrivateAddresses: true, requestTimeoutMs: 1_000, maxResponseBytes: 1_000 };
    const servers = new RemoteServers(settings as ConnectionSettings, undefined as never, () => 0);
    const source = await servers.source(
      connectionRecord("ws_0123456789abcdef", { url: "http://127.0.0.1:9/mcp" }),
    );
    await expect(source.listTools()).rejects.toThrow();
    expect(made).toBe(remoteOutputValidator);
  });
});
