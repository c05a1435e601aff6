import { describe, expect, it } from "vitest";
import { ajvPair } from "../../../../src/platform/json-schema/ajv-pair.ts";
import { withinAlternativeBudget } from "../../../../src/platform/json-schema/alternative-budget.ts";

// One error object per failing item was a heap a caller sized: 2 million items under an `anyOf`
// of 40 branches (2 MB of input) ran the process out of memory (ADR 0157).
const FORTY_CONSTS = { anyOf: Array.from({ length: 40 }, (_, i) => ({ const: `v${i}` })) };

describe("the ajv pair a schema someone else wrote is compiled by", () => {
  for (const dialect of ["draft07", "draft2020"] as const) {
    it(`stops a ${dialect} check at its first failing item, however many items fail`, () => {
      // The meta-schema check tries its own unions' branches, within a budget (ADR 0157).
      const validate = withinAlternativeBudget(() =>
        ajvPair()[dialect].compile({
          type: "object",
          properties: { a: { type: "array", items: { type: "string" } } },
        }),
      );
      expect(validate({ a: new Array(50_000).fill(0) })).toBe(false);
      expect(validate.errors?.map((e) => `${e.instancePath} ${e.message}`)).toEqual(["/a/0 must be string"]);
    });

    it(`collects for a ${dialect} anyOf only the first failing item's branches`, () => {
      // A union tries its branches within a check's budget (ADR 0157), as compileAlone runs it.
      const validate = withinAlternativeBudget(() =>
        ajvPair({ validateSchema: true })[dialect].compile({
          type: "object",
          properties: { a: { type: "array", items: FORTY_CONSTS } },
        }),
      );
      expect(withinAlternativeBudget(() => validate({ a: new Array(50_000).fill(0) }))).toBe(false);
      // The 40 branches' failures and the anyOf's own: the schema's size, not the value's.
      expect(validate.errors).toHaveLength(41);
      expect(new Set(validate.errors?.map((e) => e.instancePath))).toEqual(new Set(["/a/0"]));
    });
  }
});
