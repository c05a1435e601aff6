import { describe, expect, it } from "vitest";
import { FlushedFolders } from "../../../src/storage/flushed-folders.ts";

describe("FlushedFolders", () => {
  it("forgets the least recently remembered folder past its limit, so it is flushed again at its next use", () => {
    const flushed = new FlushedFolders(2);
    flushed.remember("/root/a");
    flushed.remember("/root/b");
    flushed.remember("/root/a");
    flushed.remember("/root/c");
    expect(["/root/a", "/root/b", "/root/c"].map((folder) => flushed.has(folder))).toEqual([
      true,
      false,
      true,
    ]);
  });

  it("never forgets a pinned root, however many folders come after it: its parent is never opened", () => {
    const flushed = new FlushedFolders(2);
    flushed.pinRoot("/root");
    for (let i = 0; i < 10; i += 1) flushed.remember(`/root/${i}`);
    expect(flushed.has("/root")).toBe(true);
    expect(flushed.has("/root/0")).toBe(false);
  });
});
