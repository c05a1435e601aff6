import { describe, expect, it } from "vitest";
import { forEachAtMost } from "../../../src/kernel/at-most.ts";

describe("forEachAtMost", () => {
  it("runs every item, never more than the limit at once, starting them in order", async () => {
    let running = 0;
    let most = 0;
    const started: number[] = [];
    await forEachAtMost([1, 2, 3, 4, 5, 6, 7], 3, async (item) => {
      started.push(item);
      running += 1;
      most = Math.max(most, running);
      await new Promise((resolve) => setTimeout(resolve, 5 * (item % 3)));
      running -= 1;
    });
    expect(started).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(most).toBe(3);
  });

  it("lets an item that waits hold one lane while the rest go by", async () => {
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const done: string[] = [];
    const pass = forEachAtMost(["hangs", "a", "b", "c"], 2, async (item) => {
      if (item === "hangs") await held;
      done.push(item);
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(done).toEqual(["a", "b", "c"]);
    release();
    await pass;
    expect(done).toEqual(["a", "b", "c", "hangs"]);
  });

  it("finishes the others when one fails, then throws the first failure", async () => {
    const done: number[] = [];
    await expect(
      forEachAtMost([1, 2, 3], 1, async (item) => {
        if (item !== 3) throw new Error(`item ${item}`);
        done.push(item);
      }),
    ).rejects.toThrow("item 1");
    expect(done).toEqual([3]);
  });
});
