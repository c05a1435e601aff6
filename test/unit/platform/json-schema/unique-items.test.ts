import { Ajv } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { checkUniqueItemsLinearly } from "../../../../src/platform/json-schema/unique-items.ts";
import { compileSchema, schemaErrors } from "../../../../src/platform/tasks/schemas.ts";

const ITEMS: Array<[unknown[], boolean]> = [
  [[1, 2, 3], true],
  [[1, 1.0], false],
  [[0, -0], false],
  [["1", 1], true],
  [[null, false, 0, ""], true],
  [
    [
      { a: 1, b: 2 },
      { b: 2, a: 1 },
    ],
    false,
  ],
  [[{ a: 1 }, { a: "1" }], true],
  [
    [
      [1, 2],
      [2, 1],
    ],
    true,
  ],
  [
    [
      [1, { x: [true] }],
      [1, { x: [true] }],
    ],
    false,
  ],
  [[{ a: { b: [1, 2] } }, { a: { b: [1, 2, 3] } }], true],
  [[], true],
];

describe("uniqueItems checked linearly", () => {
  it.for([
    ["draft-07", () => new Ajv({ strict: false, allErrors: true })],
    ["2020-12", () => new Ajv2020({ strict: false, allErrors: true })],
  ] as const)("answers as ajv's own check does (%s)", ([, make]) => {
    const own = make();
    const linear = make();
    checkUniqueItemsLinearly(linear);
    const schema = { type: "array", uniqueItems: true };
    for (const [items, distinct] of ITEMS) {
      expect(own.validate(schema, items), JSON.stringify(items)).toBe(distinct);
      expect(linear.validate(schema, items), JSON.stringify(items)).toBe(distinct);
    }
    expect(linear.validate({ type: "array", uniqueItems: false }, [1, 1])).toBe(true);
  });

  it("is what a task's schemas check, and says what is wrong", () => {
    const validate = compileSchema("inputSchema", {
      type: "object",
      properties: { xs: { type: "array", uniqueItems: true } },
    });
    expect(schemaErrors(validate, { xs: [{ a: 1 }, { a: 2 }] })).toEqual([]);
    expect(schemaErrors(validate, { xs: [{ a: 1 }, { a: 1 }] })).toEqual([
      "/xs must NOT have duplicate items",
    ]);
    // 30,000 distinct objects: pairwise, ajv took about 10 s here; a set takes milliseconds. Not
    // timed (no timed tests): the answer is checked, and the suite's own time would show a regression.
    const many = Array.from({ length: 30_000 }, (_, i) => ({ a: i }));
    expect(schemaErrors(validate, { xs: many })).toEqual([]);
    expect(schemaErrors(validate, { xs: [...many, { a: 29_999 }] })).toEqual([
      "/xs must NOT have duplicate items",
    ]);
  });
});
