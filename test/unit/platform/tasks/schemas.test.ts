import { describe, expect, it, vi } from "vitest";
import { MAX_MATCH_UNITS, MatchBudgetExceeded } from "../../../../src/platform/json-schema/linear-regexp.ts";
import { compileSchema, schemaErrors } from "../../../../src/platform/tasks/schemas.ts";

describe("a task's schema", () => {
  it("checks a pattern with RE2: a long near-match of a nested quantifier is answered, and rightly", () => {
    // The reviewer's schema: V8's RegExp held the server for 91 s on 35 characters of this input.
    const validate = compileSchema("inputSchema", {
      type: "object",
      properties: { a: { type: "string", pattern: "^(a+)+$" } },
    });
    expect(schemaErrors(validate, { a: `${"a".repeat(50_000)}!` })).toEqual([
      '/a must match pattern "^(a+)+$"',
    ]);
    expect(schemaErrors(validate, { a: "a".repeat(50_000) })).toEqual([]);
  });

  it("sums the cost of every pattern match of one check: a pattern repeated by allOf is paid for each time", () => {
    // 996 instructions; 2,001 characters cost ≈ 2 M units, under the budget once and over it
    // thrice. The string matches: a check stops at its first failure, so a failing match would
    // end it before the second is paid for.
    const pattern = "[ab]*a[ab]{990}[cd]";
    const text = `${"ba".repeat(1000)}c`;
    const once = compileSchema("inputSchema", { type: "string", pattern });
    const thrice = compileSchema("inputSchema", {
      allOf: [1, 2, 3].map(() => ({ type: "string", pattern })),
    });
    expect(3 * 2002 * 996).toBeGreaterThan(MAX_MATCH_UNITS);
    expect(schemaErrors(once, text)).toEqual([]);
    expect(() => schemaErrors(thrice, text)).toThrow(MatchBudgetExceeded);
    // Each check has a budget of its own: the refusal leaves nothing spent for the next.
    expect(schemaErrors(once, `${text}!`)).toEqual([]);
    expect(schemaErrors(once, text.slice(0, -1))).toEqual([`(the value) must match pattern "${pattern}"`]);
  });

  it("names the first failure of a value whose every item fails, where and what", () => {
    const validate = compileSchema("inputSchema", {
      type: "object",
      properties: { a: { type: "array", items: { type: "string" } }, b: { type: "number" } },
    });
    expect(schemaErrors(validate, { a: new Array(50_000).fill(0), b: "x" })).toEqual(["/a/0 must be string"]);
    expect(schemaErrors(validate, { a: ["x"], b: "x" })).toEqual(["/b must be number"]);
  });

  it("shows at most 10 of the failures an anyOf of many branches makes for one item", () => {
    const validate = compileSchema("inputSchema", {
      type: "object",
      properties: {
        a: { type: "array", items: { anyOf: Array.from({ length: 40 }, (_, i) => ({ const: `v${i}` })) } },
      },
    });
    const shown = schemaErrors(validate, { a: new Array(50_000).fill(0) });
    expect(shown).toHaveLength(10);
    expect(shown.every((line) => line.startsWith("/a/0 "))).toBe(true);
    expect(validate.errors?.length).toBeLessThanOrEqual(10);
  });

  it("checks typical patterns on strings of hundreds of KB within the budget", () => {
    const base64 = compileSchema("inputSchema", { type: "string", pattern: "^[A-Za-z0-9+/]*={0,2}$" });
    const name = compileSchema("inputSchema", { type: "string", pattern: "^[a-z][a-z0-9_]*$" });
    const body = Buffer.alloc(300 * 1024, 7).toString("base64");
    expect(schemaErrors(base64, body)).toEqual([]);
    expect(schemaErrors(base64, `${body}!`)).toHaveLength(1);
    expect(schemaErrors(name, `a${"b".repeat(500 * 1024)}`)).toEqual([]);
  });

  it("matches patternProperties keys with RE2 too", () => {
    const validate = compileSchema("inputSchema", {
      type: "object",
      patternProperties: { "^(a|aa)+$": { type: "number" } },
    });
    expect(schemaErrors(validate, { [`${"a".repeat(10_000)}`]: "x" })).toHaveLength(1);
    expect(schemaErrors(validate, { [`${"a".repeat(10_000)}!`]: "x" })).toEqual([]);
  });

  it("answers a value nested past the stack as a problem with the value, not a thrown RangeError", () => {
    const validate = compileSchema("inputSchema", { type: "object", properties: { a: { $ref: "#" } } });
    let deep: Record<string, unknown> = {};
    for (let level = 0; level < 100_000; level++) deep = { a: deep };
    const errors = schemaErrors(validate, deep);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^\(the value\) could not be checked: .*; it is nested too deeply$/);
  });

  it("is compiled on its own: another schema's $id is neither taken nor reachable", () => {
    const mine = { $id: "https://example.com/order.json", type: "object", required: ["id"] };
    const theirs = { $id: "https://example.com/order.json", type: "string" };
    expect(schemaErrors(compileSchema("inputSchema", mine), {})).toEqual([
      "(the value) must have required property 'id'",
    ]);
    expect(schemaErrors(compileSchema("inputSchema", theirs), "x")).toEqual([]);
    expect(() => compileSchema("inputSchema", { $ref: "https://example.com/order.json" })).toThrow(
      "can't resolve reference https://example.com/order.json",
    );
    const meta = { $id: "https://json-schema.org/draft/2020-12/schema", type: "string" };
    expect(() => compileSchema("inputSchema", meta)).toThrow("a JSON Schema meta-schema's");
    expect(schemaErrors(compileSchema("inputSchema", { type: "string", minLength: 2 }), "a")).toHaveLength(1);
  });

  it("checks formats, without a console warning, and leaves url unchecked", () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    try {
      const validate = compileSchema("inputSchema", {
        type: "object",
        properties: { to: { type: "string", format: "email" }, site: { type: "string", format: "url" } },
      });
      expect(schemaErrors(validate, { to: "not an address" })).toEqual(['/to must match format "email"']);
      expect(schemaErrors(validate, { to: "a@example.com", site: `http://${":".repeat(40_000)}` })).toEqual(
        [],
      );
      expect(warn).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
    }
  });

  it("compiles each $ref once: a definition named from many places is not copied into each", () => {
    // The reviewer's shape, smaller: inlined, 60 $refs to 60 properties compiled to 1 MB of code
    // (200 × 200, 9 KB of JSON, to 12 MB in 4 s; 40 KB ran the process out of memory).
    const properties = Object.fromEntries(
      Array.from({ length: 60 }, (_, n) => [`p${n}`, { type: "string" }]),
    );
    const schema = {
      $defs: { d: { properties } },
      allOf: Array.from({ length: 60 }, () => ({ $ref: "#/$defs/d" })),
    };
    const validate = compileSchema("inputSchema", schema);
    expect(validate.toString().length).toBeLessThan(10 * JSON.stringify(schema).length);
    expect(schemaErrors(validate, { p59: 1 })[0]).toBe("/p59 must be string");
    expect(schemaErrors(validate, { p59: "a" })).toEqual([]);
  });

  it("refuses a keyword of the wrong type, or a $ref that overflows ajv, in its own words, not JavaScript's", () => {
    expect(() => compileSchema("inputSchema", { $id: 5 })).toThrow(
      /a keyword has|keywords has a value of the wrong type/,
    );
    expect(() => compileSchema("inputSchema", { $id: 5 })).not.toThrow(/is not a function/);
    const endless = { properties: { a: { $ref: "#/properties/a" } } };
    expect(() => compileSchema("inputSchema", endless)).toThrow(/applies the schema at "#\/properties\/a"/);
    expect(() => compileSchema("inputSchema", endless)).not.toThrow(/call stack/);
  });

  it("refuses an asynchronous schema ($async), whose check would answer a promise after its budget ended", () => {
    // Was accepted; a valid input's run then ended the process (a pattern checked after the
    // validator's first await, outside any match budget, rejected a promise nobody awaited).
    const schema = {
      $async: true,
      type: "object",
      $defs: { s: { $async: true, type: "string" } },
      properties: { x: { $ref: "#/$defs/s" }, y: { type: "string", pattern: "^b" } },
    };
    expect(() => compileSchema("inputSchema", schema)).toThrow(/asynchronous schema \(\$async: true\)/);
  });

  it("checks a decimal multipleOf to 9 places: 0.3 is a multiple of 0.1, 0.35 is not", () => {
    const validate = compileSchema("inputSchema", { type: "number", multipleOf: 0.1 });
    expect(schemaErrors(validate, 0.3)).toEqual([]);
    expect(schemaErrors(validate, 0.7)).toEqual([]);
    expect(schemaErrors(validate, 0.35)).toEqual(["(the value) must be multiple of 0.1"]);
  });
});
