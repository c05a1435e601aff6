import { describe, expect, it } from "vitest";
import { jsonBoundsProblem, MAX_JSON_CONTAINERS, MAX_JSON_DEPTH } from "../../../src/web/json-bounds.ts";

const nested = (depth: number, open = "[", close = "]") => open.repeat(depth) + close.repeat(depth);
const DEEP = `nests deeper than ${MAX_JSON_DEPTH} arrays or objects`;

describe("jsonBoundsProblem", () => {
  it("counts arrays and objects opened inside one another, up to the bound", () => {
    expect(jsonBoundsProblem(nested(MAX_JSON_DEPTH))).toBeUndefined();
    expect(jsonBoundsProblem(nested(MAX_JSON_DEPTH + 1))).toBe(DEEP);
    expect(jsonBoundsProblem('{"a":{"b":{"c":[1]}}}', 4)).toBeUndefined();
    expect(jsonBoundsProblem('{"a":{"b":{"c":[1]}}}', 3)).toBe("nests deeper than 3 arrays or objects");
  });

  it("counts depth, not the number of brackets: siblings do not add up to depth", () => {
    expect(
      jsonBoundsProblem(`[${Array.from({ length: 10_000 }, () => "[[1]]").join(",")}]`, 3),
    ).toBeUndefined();
  });

  it("counts every array and object in the body, side by side or nested, up to the bound", () => {
    const side = (count: number) => `[${Array.from({ length: count - 1 }, () => "{}").join(",")}]`;
    expect(jsonBoundsProblem(side(MAX_JSON_CONTAINERS))).toBeUndefined();
    expect(jsonBoundsProblem(side(MAX_JSON_CONTAINERS + 1))).toBe(
      `holds more than ${MAX_JSON_CONTAINERS} arrays and objects`,
    );
    expect(
      jsonBoundsProblem(`[${Array.from({ length: 40 }, () => nested(100)).join(",")}]`, 128, 4_000),
    ).toBe("holds more than 4000 arrays and objects");
  });

  it("ignores brackets inside strings, escaped quotes included", () => {
    expect(jsonBoundsProblem(JSON.stringify({ text: nested(1000) }), 2)).toBeUndefined();
    expect(jsonBoundsProblem(JSON.stringify({ text: `\\"${nested(1000)}` }), 2)).toBeUndefined();
    expect(jsonBoundsProblem(`["\\\\", ${nested(5)}]`, 5)).toBe("nests deeper than 5 arrays or objects");
    expect(jsonBoundsProblem(JSON.stringify({ text: "[]".repeat(MAX_JSON_CONTAINERS) }))).toBeUndefined();
  });
});
