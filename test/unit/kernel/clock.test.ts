import { describe, expect, it } from "vitest";
import { isWithin } from "../../../src/kernel/clock.ts";

describe("isWithin", () => {
  it("is true from `since` up to, not including, `ms` after it", () => {
    expect(isWithin(1_000, 1_000, 500)).toBe(true);
    expect(isWithin(1_499, 1_000, 500)).toBe(true);
    expect(isWithin(1_500, 1_000, 500)).toBe(false);
  });

  it("is false for a clock stepped back behind `since`, however little", () => {
    expect(isWithin(999, 1_000, 500)).toBe(false);
    expect(isWithin(1_000 - 3_600_000, 1_000, 500)).toBe(false);
  });
});
