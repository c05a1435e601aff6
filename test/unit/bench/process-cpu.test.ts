import { describe, expect, it } from "vitest";
import { processCpuUs } from "../../../bench/lib/process-cpu.ts";

describe.runIf(process.platform === "linux")("processCpuUs", () => {
  it("counts this process's CPU time, which grows while it works", () => {
    const before = processCpuUs(process.pid);
    expect(before).toBeGreaterThanOrEqual(0);
    // Work until the kernel's 10 ms ticks show it, bounded so a broken reader fails, not hangs.
    const deadline = Date.now() + 5_000;
    let after = before;
    while (after === before && Date.now() < deadline) {
      for (let i = 0; i < 1e6; i++) Math.sqrt(i);
      after = processCpuUs(process.pid);
    }
    expect(after).toBeGreaterThan(before ?? 0);
  });

  it("is undefined for a process that does not exist", () => {
    expect(processCpuUs(2 ** 22 + 1)).toBeUndefined();
  });
});
