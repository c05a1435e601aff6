import { describe, expect, it } from "vitest";
import { Slots } from "../../../src/kernel/slots.ts";

describe("Slots", () => {
  it("runs at most its size at once, the rest in the order they came, and a failure frees its slot", async () => {
    const slots = new Slots(2);
    const releases: Array<() => void> = [];
    const started: number[] = [];
    let running = 0;
    let most = 0;
    const runs = Array.from({ length: 6 }, (_, i) =>
      slots.run(async () => {
        started.push(i);
        running += 1;
        most = Math.max(most, running);
        await new Promise<void>((resolve) => releases.push(resolve));
        running -= 1;
        if (i === 1) throw new Error("work 1 failed");
        return i;
      }),
    );
    // Watched from the start: work 1's failure must not go unhandled while the others wait.
    const results = Promise.allSettled(runs);
    const settle = () => new Promise((resolve) => setImmediate(resolve));
    await settle();
    expect(started).toEqual([0, 1]);
    for (let released = 0; released < 6; released += 1) {
      releases[released]?.();
      await settle();
    }
    const outcomes = await results;
    expect(started).toEqual([0, 1, 2, 3, 4, 5]);
    expect(most).toBe(2);
    expect(outcomes.map((r) => (r.status === "fulfilled" ? r.value : "failed"))).toEqual([
      0,
      "failed",
      2,
      3,
      4,
      5,
    ]);
  });
});
