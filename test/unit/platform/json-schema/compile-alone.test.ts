import type { ValidateFunction } from "ajv";
import { describe, expect, it } from "vitest";
import { ajvPair } from "../../../../src/platform/json-schema/ajv-pair.ts";
import { compileAlone, MAX_KEPT_ERRORS } from "../../../../src/platform/json-schema/compile-alone.ts";

/** `schema` compiled alone, and the validator ajv compiled, which the answer wraps. */
function compiled(schema: Record<string, unknown>): { validate: ValidateFunction; inner: ValidateFunction } {
  const { draft2020 } = ajvPair();
  let inner: ValidateFunction | undefined;
  const validate = compileAlone(
    {
      compile: (s: object) => {
        inner = draft2020.compile(s);
        return inner;
      },
      removeSchema: (s: object) => draft2020.removeSchema(s),
      refs: draft2020.refs,
      schemas: draft2020.schemas,
    } as unknown as Parameters<typeof compileAlone>[0],
    schema,
  );
  if (!inner) throw new Error("not compiled");
  return { validate, inner };
}

describe("a validator compiled alone", () => {
  it("keeps a few errors of a refused value, and nothing on the validator ajv compiled", () => {
    const { validate, inner } = compiled({
      type: "object",
      properties: {
        a: { type: "array", items: { anyOf: Array.from({ length: 40 }, (_, i) => ({ const: i })) } },
      },
    });
    expect(validate({ a: new Array(50_000).fill("x") })).toBe(false);
    expect(validate.errors).toHaveLength(MAX_KEPT_ERRORS);
    expect(validate.errors?.[0]?.instancePath).toBe("/a/0");
    expect(inner.errors).toBeNull();
  });

  it("keeps no errors once it lets a value go, nor after a check that threw", () => {
    const { validate, inner } = compiled({ type: "object", properties: { child: { $ref: "#" } } });
    expect(validate({ child: 1 })).toBe(false);
    expect(validate.errors).toHaveLength(1);
    expect(validate({ child: {} })).toBe(true);
    expect(validate.errors).toBeNull();
    let deep: Record<string, unknown> = { child: 1 };
    for (let level = 0; level < 100_000; level++) deep = { child: deep };
    expect(() => validate(deep)).toThrow(RangeError);
    expect(validate.errors).toBeNull();
    expect(inner.errors).toBeNull();
  });
});
