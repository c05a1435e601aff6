import { describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH, nestsDeeperThan } from "../../../src/web/json-depth.ts";

const nested = (depth: number, open = "[", close = "]") => open.repeat(depth) + close.repeat(depth);

describe("nestsDeeperThan", () => {
  it("counts arrays and objects opened inside one another, up to the bound", () => {
    expect(nestsDeeperThan(nested(MAX_JSON_DEPTH))).toBe(false);
    expect(nestsDeeperThan(nested(MAX_JSON_DEPTH + 1))).toBe(true);
    expect(nestsDeeperThan('{"a":{"b":{"c":[1]}}}', 4)).toBe(false);
    expect(nestsDeeperThan('{"a":{"b":{"c":[1]}}}', 3)).toBe(true);
  });

  it("counts depth, not the number of brackets: siblings do not add up", () => {
    expect(nestsDeeperThan(`[${Array.from({ length: 10_000 }, () => "[[1]]").join(",")}]`, 3)).toBe(false);
  });

  it("ignores brackets inside strings, escaped quotes included", () => {
    expect(nestsDeeperThan(JSON.stringify({ text: nested(1000) }), 2)).toBe(false);
    expect(nestsDeeperThan(JSON.stringify({ text: `\\"${nested(1000)}` }), 2)).toBe(false);
    expect(nestsDeeperThan(`["\\\\", ${nested(5)}]`, 5)).toBe(true);
  });
});
