import { describe, expect, it } from "vitest";
import { WrittenNotFlushed } from "../../../src/storage/atomic.ts";
import { DiskCache } from "../../../src/storage/disk-cache.ts";
import { type Gate, gate } from "../../helpers/gate.ts";

// A cache of disk is filled only by a read no write overtook (ADR 0162): the reads run without the
// writers' lock, so a read here is a load held at a gate, answering the value as it read it.

/** A load that read `value` and answers it once `held` opens. */
function heldLoad(held: Gate, value: string): () => Promise<string> {
  return async () => {
    await held.promise;
    return value;
  };
}

describe("DiskCache", () => {
  it("keeps what a read found when no write of its key ended meanwhile", async () => {
    const cache = new DiskCache<string>();
    expect(await cache.read("k", async () => "on disk")).toBe("on disk");
    expect(cache.get("k")).toBe("on disk");
  });

  it("keeps nothing a read found when a write of its key ended while it was under way", async () => {
    const cache = new DiskCache<string>();
    const held = gate();
    const read = cache.read("k", heldLoad(held, "old"));
    await cache.write("k", "new", async () => undefined);
    held.open();
    expect(await read).toBe("old");
    expect(cache.get("k")).toBe("new");
  });

  it("keeps nothing a read found when a write that failed ended meanwhile: it may have reached the file", async () => {
    const cache = new DiskCache<string>();
    const held = gate();
    const read = cache.read("k", heldLoad(held, "old"));
    await expect(
      cache.write("k", "new", async () => {
        throw new Error("flush failed");
      }),
    ).rejects.toThrow("flush failed");
    held.open();
    await read;
    expect(cache.get("k")).toBeUndefined();
  });

  it("keeps nothing a read found when its key was deleted meanwhile", async () => {
    const cache = new DiskCache<string>();
    const held = gate();
    const read = cache.read("k", heldLoad(held, "removed"));
    cache.delete("k");
    held.open();
    await read;
    expect(cache.get("k")).toBeUndefined();
  });

  it("a write overtakes only the reads of its own key, and only those under way", async () => {
    const cache = new DiskCache<string>();
    const held = gate();
    const otherRead = cache.read("other", heldLoad(held, "o"));
    await cache.write("k", "new", async () => undefined);
    const readAfter = cache.read("k", heldLoad(held, "newer"));
    held.open();
    await Promise.all([otherRead, readAfter]);
    expect(cache.get("other")).toBe("o");
    expect(cache.get("k")).toBe("newer");
  });

  it("a read that finds nothing keeps nothing", async () => {
    const cache = new DiskCache<string>();
    expect(await cache.read("k", async () => undefined)).toBeUndefined();
    expect(cache.get("k")).toBeUndefined();
  });

  // A write that throws leaves memory what the disk holds (ADR 0166).
  const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });

  it("a write that landed and then failed its flush keeps the new value, and is done", async () => {
    const cache = new DiskCache<string>();
    await cache.read("k", async () => "old");
    await cache.write("k", "new", async () => {
      throw new WrittenNotFlushed("/data/k.json", eio());
    });
    expect(cache.get("k")).toBe("new");
  });

  it("a write that failed otherwise keeps neither value: the next read goes to the disk", async () => {
    const cache = new DiskCache<string>();
    await cache.read("k", async () => "old");
    await expect(
      cache.write("k", "new", async () => {
        throw eio();
      }),
    ).rejects.toThrow("EIO");
    expect(cache.get("k")).toBeUndefined();
    expect(await cache.read("k", async () => "as on disk")).toBe("as on disk");
    expect(cache.get("k")).toBe("as on disk");
  });
});
