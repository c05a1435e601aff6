import type { Tool } from "@modelcontextprotocol/client";
import { describe, expect, it } from "vitest";
import { compileInputSchema } from "../../../../src/platform/connections/schemas.ts";

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
