import { describe, expect, it } from "vitest";
import { LoadedPartitions } from "../../../../src/platform/conversations/loaded-partitions.ts";
import type { PartitionIndex } from "../../../../src/platform/conversations/partition-index.ts";

const IDLE_MS = 10 * 60 * 1000;
/** idle() reads only when a partition was last used; its index is not looked at. */
const index = { estimatedBytes: 0 } as unknown as PartitionIndex;

describe("LoadedPartitions' idle partitions", () => {
  it("are those unused for the idle time, and not before", () => {
    const loaded = new LoadedPartitions({ idleMs: IDLE_MS });
    const usedAt = Date.UTC(2026, 11, 7, 12);
    loaded.add("p1", { index, lastUsed: usedAt });
    expect(loaded.idle(usedAt + IDLE_MS - 1)).toEqual([]);
    expect(loaded.idle(usedAt + IDLE_MS)).toEqual(["p1"]);
  });

  it("include one last used after now: the clock was stepped back since, so its idle time is unknown (ADR 0168)", () => {
    const loaded = new LoadedPartitions({ idleMs: IDLE_MS });
    const usedAt = Date.UTC(2026, 11, 7, 12);
    loaded.add("p1", { index, lastUsed: usedAt });
    // Before, it was kept in memory until the clock had caught up with its last use, a day on.
    expect(loaded.idle(usedAt - 24 * 60 * 60 * 1000)).toEqual(["p1"]);
  });
});
