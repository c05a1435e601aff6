import { createHash, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { startSha256 } from "../../../src/crypto/sha256-worker.ts";

const sha256 = (...parts: Uint8Array[]) => {
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part);
  return hash.digest("hex");
};

describe("startSha256 (on the hashing thread)", () => {
  it("digests chunks in the order handed over, across several updates", async () => {
    const parts = [randomBytes(100_000), randomBytes(1), randomBytes(3 * 65_536 + 5)];
    const expected = sha256(...parts);
    const hash = startSha256();
    hash.update([Uint8Array.from(parts[0] as Buffer)]);
    hash.update([Uint8Array.from(parts[1] as Buffer), Uint8Array.from(parts[2] as Buffer)]);
    expect(await hash.digest()).toBe(expected);
  });

  it("acknowledges each update once hashed, in order, so a caller can wait for it", async () => {
    const hash = startSha256();
    const acknowledged: number[] = [];
    const updates = [0, 1, 2].map((n) =>
      hash.update([new Uint8Array(randomBytes(200_000))]).then(() => acknowledged.push(n)),
    );
    await Promise.all(updates);
    expect(acknowledged).toEqual([0, 1, 2]);
    expect(await hash.digest()).toMatch(/^[0-9a-f]{64}$/);
  });

  it("keeps two hashes fed in turn apart", async () => {
    const a = [randomBytes(70_000), randomBytes(70_000)];
    const b = [randomBytes(50_000), randomBytes(90_000)];
    const [first, second] = [startSha256(), startSha256()];
    first.update([Uint8Array.from(a[0] as Buffer)]);
    second.update([Uint8Array.from(b[0] as Buffer)]);
    first.update([Uint8Array.from(a[1] as Buffer)]);
    second.update([Uint8Array.from(b[1] as Buffer)]);
    expect(await Promise.all([second.digest(), first.digest()])).toEqual([sha256(...b), sha256(...a)]);
  });

  it("transfers a chunk that owns its memory and copies one that is part of a larger buffer", async () => {
    const whole = new Uint8Array(randomBytes(4096));
    const large = new Uint8Array(randomBytes(10_000));
    const part = large.subarray(1000, 3000);
    const expected = sha256(whole, part);
    const hash = startSha256();
    hash.update([whole, part]);
    // The owner's chunk is detached (no copy was made); the larger buffer is untouched.
    expect(whole.byteLength).toBe(0);
    expect(large.byteLength).toBe(10_000);
    expect(await hash.digest()).toBe(expected);
  });

  it("digests nothing as the empty string's SHA-256, and an empty chunk changes nothing", async () => {
    const empty = startSha256();
    empty.update([new Uint8Array(0)]);
    expect(await empty.digest()).toBe(sha256(new Uint8Array(0)));
  });

  it("refuses updates and a second digest once ended; a discarded hash answers nothing", async () => {
    const hash = startSha256();
    hash.update([new Uint8Array([1, 2, 3])]);
    await hash.digest();
    expect(() => hash.update([new Uint8Array([4])])).toThrow(/ended/);
    await expect(hash.digest()).rejects.toThrow(/ended/);
    const discarded = startSha256();
    discarded.update([new Uint8Array([1])]);
    discarded.discard();
    await expect(discarded.digest()).rejects.toThrow(/ended/);
  });
});
