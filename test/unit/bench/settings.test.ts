import { describe, expect, it } from "vitest";
import { readLoadSettings } from "../../../bench/lib/settings.ts";

describe("the load settings", () => {
  it("default to 10 s per target in 4 rounds with 16 connections", () => {
    expect(readLoadSettings({})).toEqual({ connections: 16, warmupSeconds: 2, seconds: 10, rounds: 4 });
  });

  it("never cut a target's time into slices shorter than a second", () => {
    expect(readLoadSettings({ BENCH_SECONDS: "2" }).rounds).toBe(2);
    expect(readLoadSettings({ BENCH_SECONDS: "0.5" }).rounds).toBe(1);
    expect(readLoadSettings({ BENCH_SECONDS: "60", BENCH_ROUNDS: "6" }).rounds).toBe(6);
  });

  it.each([
    ["BENCH_SECONDS", "0"],
    ["BENCH_SECONDS", "ten"],
    ["BENCH_ROUNDS", "-1"],
    ["BENCH_ROUNDS", "2.5"],
  ])("refuse %s=%s and say what they want", (name, value) => {
    expect(() => readLoadSettings({ [name]: value })).toThrow(name);
  });
});
