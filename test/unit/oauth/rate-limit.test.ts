import { describe, expect, it } from "vitest";
import { FixedWindowLimit } from "../../../src/oauth/rate-limit.ts";
import { testClock } from "./fixtures.ts";

describe("FixedWindowLimit", () => {
  it("allows max takes per window per key, says how long to wait, and opens again", () => {
    const clock = testClock();
    const limit = new FixedWindowLimit(2, 60_000, clock);
    expect(limit.take("a")).toBe(0);
    expect(limit.take("a")).toBe(0);
    clock.advance(15_000);
    expect(limit.take("a")).toBe(45);
    expect(limit.take("b")).toBe(0);
    clock.advance(45_000);
    expect(limit.take("a")).toBe(0);
  });
});
