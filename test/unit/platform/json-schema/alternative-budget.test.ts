import { describe, expect, it } from "vitest";
import { ajvPair } from "../../../../src/platform/json-schema/ajv-pair.ts";
import {
  AlternativeBudgetExceeded,
  MAX_ALTERNATIVES_TRIED,
} from "../../../../src/platform/json-schema/alternative-budget.ts";
import { CheckTooCostly } from "../../../../src/platform/json-schema/check-too-costly.ts";
import { compileAlone } from "../../../../src/platform/json-schema/compile-alone.ts";

// Each branch of a union, and each item a `contains` tries, made an error object when it failed,
// even with allErrors off: 699,047 items against an anyOf of 40 consts held the event loop 2-4 s
// (ADR 0157's consequences). A check tries at most MAX_ALTERNATIVES_TRIED (its amendment).
const { draft07, draft2020 } = ajvPair();
const consts = (count: number) => Array.from({ length: count }, (_, i) => ({ const: i }));

/** What `validate` answers for `value`, or the name of what it threw. */
function outcome(schema: Record<string, unknown>, value: unknown, ajv: typeof draft07 = draft2020) {
  const validate = compileAlone(ajv, schema);
  try {
    return validate(value);
  } catch (error) {
    return error;
  }
}

describe("a check's budget of alternatives tried", () => {
  it("refuses the reviewer's input, an anyOf of 40 consts over 699,047 items, naming the union and what to do", () => {
    const refused = outcome({ type: "array", items: { anyOf: consts(40) } }, new Array(699_047).fill(39));
    expect(refused).toBeInstanceOf(AlternativeBudgetExceeded);
    expect(refused).toBeInstanceOf(CheckTooCostly);
    expect((refused as Error).message).toContain(
      `more than the ${MAX_ALTERNATIVES_TRIED.toLocaleString("en-US")} alternatives one check may try`,
    );
    expect((refused as Error).message).toContain('the anyOf at "#/items/anyOf" went past it');
    expect((refused as Error).message).toContain("an enum instead of an anyOf of consts");
  });

  it("counts each branch tried: exactly the budget passes, one more try is refused", () => {
    const schema = { type: "array", items: { anyOf: consts(10) } };
    const items = MAX_ALTERNATIVES_TRIED / 10;
    // 2020-12 tries every branch of each item's anyOf.
    expect(outcome(schema, new Array(items).fill(9))).toBe(true);
    expect(outcome(schema, new Array(items + 1).fill(9))).toBeInstanceOf(AlternativeBudgetExceeded);
    // draft-07 stops at the branch that matches: the first costs one try per item.
    expect(outcome(schema, new Array(MAX_ALTERNATIVES_TRIED).fill(0), draft07)).toBe(true);
    expect(outcome(schema, new Array(items + 1).fill(9), draft07)).toBeInstanceOf(AlternativeBudgetExceeded);
  });

  it("counts a oneOf's branches and a contains's items", () => {
    expect(
      outcome(
        { type: "array", items: { oneOf: consts(2) } },
        new Array(MAX_ALTERNATIVES_TRIED / 2 + 1).fill(0),
      ),
    ).toBeInstanceOf(AlternativeBudgetExceeded);
    const last = [...new Array(MAX_ALTERNATIVES_TRIED).fill(0), 1];
    const refused = outcome({ type: "array", contains: { const: 1 } }, last);
    expect((refused as Error).message).toContain('the contains at "#/contains" went past it');
    expect(outcome({ type: "array", contains: { const: 1 } }, last.slice(1))).toBe(true);
  });

  it("gives each call a budget of its own", () => {
    const validate = compileAlone(draft2020, { type: "array", items: { anyOf: consts(2) } });
    const half = new Array(MAX_ALTERNATIVES_TRIED / 2).fill(1);
    for (let call = 0; call < 3; call++) expect(validate(half)).toBe(true);
  });

  it("leaves a usual schema's answers as they were", () => {
    const schema = {
      type: "object",
      properties: {
        mode: { anyOf: [{ const: "fast" }, { const: "slow" }] },
        tags: { type: "array", items: { oneOf: [{ type: "string" }, { type: "integer" }] } },
      },
      required: ["mode"],
    };
    expect(outcome(schema, { mode: "fast", tags: ["a", 1] })).toBe(true);
    const validate = compileAlone(draft2020, schema);
    expect(validate({ mode: "medium" })).toBe(false);
    expect(validate.errors?.map((e) => `${e.instancePath} ${e.message}`)).toEqual([
      "/mode must be equal to constant",
      "/mode must be equal to constant",
      "/mode must match a schema in anyOf",
    ]);
  });

  it("refuses a try outside any budget, as a bug in the caller", () => {
    const validate = draft2020.compile({ anyOf: consts(2) });
    expect(() => validate(1)).toThrow("outside withinAlternativeBudget");
  });
});
