import { describe, expect, it } from "vitest";
import { KeyedLock } from "../../../src/storage/keyed-lock.ts";
import { gate } from "../../helpers/gate.ts";

/** Lets every already-queued continuation run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("KeyedLock", () => {
  it("runs work on one key one at a time, in the order it arrived", async () => {
    const lock = new KeyedLock();
    const events: string[] = [];
    const gates = [gate(), gate(), gate()];
    const runs = gates.map((g, i) =>
      lock.run("ws_a", async () => {
        events.push(`start ${i}`);
        await g.promise;
        events.push(`end ${i}`);
        return i;
      }),
    );
    await settle();
    expect(events).toEqual(["start 0"]);
    // Opening a later gate first must not let its work jump the queue.
    gates[2]?.open();
    gates[1]?.open();
    await settle();
    expect(events).toEqual(["start 0"]);
    gates[0]?.open();
    expect(await Promise.all(runs)).toEqual([0, 1, 2]);
    expect(events).toEqual(["start 0", "end 0", "start 1", "end 1", "start 2", "end 2"]);
  });

  it("runs work on different keys concurrently", async () => {
    const lock = new KeyedLock();
    const started: string[] = [];
    const a = gate();
    const b = gate();
    const runA = lock.run("ws_a", async () => {
      started.push("a");
      await a.promise;
    });
    const runB = lock.run("ws_b", async () => {
      started.push("b");
      await b.promise;
    });
    await settle();
    expect(started).toEqual(["a", "b"]);
    b.open();
    await runB;
    a.open();
    await runA;
  });

  it("a rejected task rejects its own caller and does not block the next", async () => {
    const lock = new KeyedLock();
    const failing = lock.run("ws_a", async () => {
      throw new Error("disk full");
    });
    const next = lock.run("ws_a", async () => "written");
    await expect(failing).rejects.toThrow("disk full");
    await expect(next).resolves.toBe("written");
  });

  it("a task that throws synchronously does not block the next", async () => {
    const lock = new KeyedLock();
    const failing = lock.run("ws_a", () => {
      throw new Error("sync");
    });
    await expect(failing).rejects.toThrow("sync");
    await expect(lock.run("ws_a", async () => 1)).resolves.toBe(1);
  });

  it("a key can be used again after its queue drained", async () => {
    const lock = new KeyedLock();
    await lock.run("ws_a", async () => undefined);
    const order: number[] = [];
    await Promise.all([
      lock.run("ws_a", async () => {
        await settle();
        order.push(1);
      }),
      lock.run("ws_a", async () => {
        order.push(2);
      }),
    ]);
    expect(order).toEqual([1, 2]);
  });
});
