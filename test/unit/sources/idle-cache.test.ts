import { afterEach, describe, expect, it } from "vitest";
import { IdleCache } from "../../../src/sources/idle-cache.ts";
import { FakeTime } from "../../helpers/fake-time.ts";

const IDLE_MS = 60_000;

interface Value {
  key: string;
  serial: number;
}

/** A cache whose builds and disposals are recorded; `failNext` makes the next build reject. */
function harness(options: { buildGate?: Promise<void>; failNext?: boolean } = {}) {
  const built: string[] = [];
  const disposed: Value[] = [];
  let serial = 0;
  let failNext = options.failNext ?? false;
  const cache = new IdleCache<Value>(
    async (key) => {
      built.push(key);
      await options.buildGate;
      if (failNext) {
        failNext = false;
        throw new Error(`cannot build ${key}`);
      }
      serial += 1;
      return { key, serial };
    },
    async (value) => {
      disposed.push(value);
    },
    IDLE_MS,
  );
  caches.push(cache);
  return { cache, built, disposed };
}

const caches: IdleCache<Value>[] = [];

afterEach(async () => {
  await Promise.allSettled(caches.splice(0).map((c) => c.close()));
});

describe("IdleCache", () => {
  it("builds a key's value once, however many concurrent users ask for it", async () => {
    const { cache, built } = harness();
    const values = await Promise.all([1, 2, 3].map(() => cache.use("ws_a", async (v) => v)));
    expect(built).toEqual(["ws_a"]);
    expect(new Set(values).size).toBe(1);
    await cache.use("ws_a", async () => undefined);
    expect(built).toEqual(["ws_a"]);
    expect(cache.size).toBe(1);
  });

  it("builds one value per key", async () => {
    const { cache, built } = harness();
    await cache.use("ws_a", async () => undefined);
    await cache.use("ws_b", async () => undefined);
    expect(built).toEqual(["ws_a", "ws_b"]);
    expect(cache.size).toBe(2);
  });

  it("returns what the work returns and passes its rejection through", async () => {
    const { cache } = harness();
    expect(await cache.use("ws_a", async (v) => v.key)).toBe("ws_a");
    await expect(
      cache.use("ws_a", async () => {
        throw new Error("work failed");
      }),
    ).rejects.toThrow("work failed");
  });

  it("evicts and disposes a value once it has been idle for idleMs, and not before", async () => {
    const { cache, disposed, built } = harness();
    const value = await cache.use("ws_a", async (v) => v);
    const usedAt = Date.now();
    await cache.sweep(usedAt + IDLE_MS - 1_000);
    expect(disposed).toEqual([]);
    expect(cache.size).toBe(1);
    await cache.sweep(usedAt + IDLE_MS + 1_000);
    expect(disposed).toEqual([value]);
    expect(cache.size).toBe(0);
    // The next use builds afresh.
    await cache.use("ws_a", async () => undefined);
    expect(built).toEqual(["ws_a", "ws_a"]);
  });

  it("evicts a value last used after now: the clock was stepped back since, so its idle time is unknown (ADR 0168)", async () => {
    const { cache, disposed } = harness();
    await cache.use("ws_a", async () => undefined);
    // Before, it was kept until the clock had caught up with its last use, a day from now.
    await cache.sweep(Date.now() - 24 * 60 * 60 * 1000);
    expect(cache.size).toBe(0);
    expect(disposed).toHaveLength(1);
  });

  it("never evicts a value while it is in use", async () => {
    const { cache, disposed } = harness();
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const inFlight = cache.use("ws_a", async () => {
      await released;
      return disposed.length;
    });
    await new Promise((resolve) => setImmediate(resolve));
    await cache.sweep(Date.now() + 100 * IDLE_MS);
    expect(disposed).toEqual([]);
    release();
    expect(await inFlight).toBe(0);
    await cache.sweep(Date.now() + IDLE_MS);
    expect(disposed).toHaveLength(1);
  });

  it("a use restarts the idle clock", async () => {
    let nowMs = 1_000_000;
    // The cache's clock, moved by hand instead of waiting.
    const cache = new IdleCache<Value>(
      async (key) => ({ key, serial: 1 }),
      async () => {},
      IDLE_MS,
      { clock: () => nowMs },
    );
    caches.push(cache);
    await cache.use("ws_a", async () => undefined);
    nowMs += IDLE_MS - 1;
    await cache.use("ws_a", async () => undefined);
    nowMs += IDLE_MS - 1;
    await cache.sweep();
    expect(cache.size).toBe(1);
    nowMs += 1;
    await cache.sweep();
    expect(cache.size).toBe(0);
  });

  it("sweeps on the timers it is given: an idle value is disposed once its idle time has passed on them", async () => {
    const time = new FakeTime();
    const disposed: string[] = [];
    const cache = new IdleCache<string>(
      async (key) => key,
      async (key) => {
        disposed.push(key);
      },
      IDLE_MS,
      time,
    );
    stringCaches.push(cache);
    expect(time.armed()).toBe(0);
    await cache.use("ws_a", async () => undefined);
    await time.advance(IDLE_MS - 1);
    expect(cache.size).toBe(1);
    await time.advance(IDLE_MS);
    expect(disposed).toEqual(["ws_a"]);
    expect(cache.size).toBe(0);
    // Nothing held, nothing armed: an empty cache waits on no timer.
    expect(time.armed()).toBe(0);
  });

  it("evict disposes the value and drops the key", async () => {
    const { cache, disposed } = harness();
    const value = await cache.use("ws_a", async (v) => v);
    await cache.evict("ws_a");
    expect(disposed).toEqual([value]);
    expect(cache.size).toBe(0);
  });

  it("evicting an unknown key does nothing", async () => {
    const { cache, disposed } = harness();
    await cache.evict("ws_never");
    expect(disposed).toEqual([]);
  });

  it("a failed build is not cached: the next use builds again", async () => {
    const { cache, built } = harness({ failNext: true });
    await expect(cache.use("ws_a", async () => undefined)).rejects.toThrow("cannot build ws_a");
    expect(cache.size).toBe(0);
    await expect(cache.use("ws_a", async (v) => v.key)).resolves.toBe("ws_a");
    expect(built).toEqual(["ws_a", "ws_a"]);
  });

  it("a dispose that fails does not fail the eviction", async () => {
    const cache = new IdleCache<string>(
      async (key) => key,
      async () => {
        throw new Error("close failed");
      },
      IDLE_MS,
    );
    await cache.use("ws_a", async () => undefined);
    await expect(cache.evict("ws_a")).resolves.toBeUndefined();
    expect(cache.size).toBe(0);
    await cache.close();
  });

  it("evicting a key whose build is still pending and then fails resolves, with nothing to dispose", async () => {
    // BUG (src/sources/idle-cache.ts:45): evict awaits `entry.value` outside the `.catch`
    // that guards dispose, so a build that rejects makes evict (and close, and sweep) reject.
    // DELETE /v1/workspaces/:ws evicts while a first request may still be building.
    let failBuild!: () => void;
    const buildGate = new Promise<void>((resolve) => {
      failBuild = resolve;
    });
    const { cache, disposed } = harness({ buildGate, failNext: true });
    const firstUse = cache.use("ws_a", async () => undefined);
    firstUse.catch(() => undefined);
    await new Promise((resolve) => setImmediate(resolve));
    const eviction = cache.evict("ws_a");
    failBuild();
    await expect(firstUse).rejects.toThrow("cannot build ws_a");
    await expect(eviction).resolves.toBeUndefined();
    expect(disposed).toEqual([]);
  });

  it("close disposes every value", async () => {
    const { cache, disposed } = harness();
    await cache.use("ws_a", async () => undefined);
    await cache.use("ws_b", async () => undefined);
    await cache.close();
    expect(disposed.map((v) => v.key).sort()).toEqual(["ws_a", "ws_b"]);
    expect(cache.size).toBe(0);
  });
});

describe("IdleCache with a byte budget (adr/0179)", () => {
  /** A cache whose values weigh what `weights` says for their key, at each measure. */
  function budgeted(maxBytes: number, weights: Map<string, number>) {
    const disposed: string[] = [];
    const cache = new IdleCache<string>(
      async (key) => key,
      async (key) => {
        disposed.push(key);
      },
      IDLE_MS,
      { budget: { sizeOf: (key) => weights.get(key) ?? 0, maxBytes } },
    );
    stringCaches.push(cache);
    return { cache, disposed };
  }

  it("lets go of the least recently used values past the budget, long before their idle time", async () => {
    const weights = new Map([
      ["ws_a", 40],
      ["ws_b", 40],
      ["ws_c", 40],
    ]);
    const { cache, disposed } = budgeted(100, weights);
    await cache.use("ws_a", async () => undefined);
    await cache.use("ws_b", async () => undefined);
    // ws_a used again: ws_b is now the least recent.
    await cache.use("ws_a", async () => undefined);
    await cache.use("ws_c", async () => undefined);
    expect(disposed).toEqual(["ws_b"]);
    expect(cache.size).toBe(2);
    expect(cache.bytes).toBe(80);
  });

  it("counts a value's growth during a use", async () => {
    const weights = new Map([
      ["ws_a", 10],
      ["ws_b", 10],
    ]);
    const { cache, disposed } = budgeted(100, weights);
    await cache.use("ws_a", async () => undefined);
    await cache.use("ws_b", async () => {
      weights.set("ws_b", 95);
    });
    expect(disposed).toEqual(["ws_a"]);
    expect(cache.bytes).toBe(95);
  });

  it("never lets go of a value in use to keep to the budget", async () => {
    const weights = new Map([
      ["ws_a", 60],
      ["ws_b", 60],
    ]);
    const { cache, disposed } = budgeted(100, weights);
    await cache.use("ws_a", async () => undefined);
    await cache.use("ws_a", async () => {
      await cache.use("ws_b", async () => undefined);
      // ws_a is the least recent but in use: ws_b, over the budget with it, goes instead.
      expect(disposed).toEqual(["ws_b"]);
    });
    expect(cache.size).toBe(1);
    expect(cache.bytes).toBe(60);
  });

  it("uncounts what is evicted or swept", async () => {
    const weights = new Map([["ws_a", 30]]);
    const { cache } = budgeted(100, weights);
    await cache.use("ws_a", async () => undefined);
    expect(cache.bytes).toBe(30);
    await cache.evict("ws_a");
    expect(cache.bytes).toBe(0);
    await cache.use("ws_a", async () => undefined);
    await cache.sweep(Date.now() + IDLE_MS + 1_000);
    expect(cache.bytes).toBe(0);
    expect(cache.size).toBe(0);
  });
});

const stringCaches: IdleCache<string>[] = [];

afterEach(async () => {
  await Promise.allSettled(stringCaches.splice(0).map((c) => c.close()));
});
