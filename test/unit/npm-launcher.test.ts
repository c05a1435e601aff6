import { expect, it } from "vitest";
import { parentInStat } from "../../src/npm-launcher.ts";

it("reads the parent pid past a command name that holds spaces and parentheses", () => {
  expect(parentInStat("4242 (npm exec atrium) S 4100 4242 4100 0 -1 4194560")).toBe(4100);
  expect(parentInStat("4243 (a) b (c)) R 17 4243 17 0 -1")).toBe(17);
});

it("gives nothing for a stat line it cannot read", () => {
  expect(parentInStat("")).toBeUndefined();
  expect(parentInStat("4242 (sh) S")).toBeUndefined();
});
