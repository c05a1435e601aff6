import { describe, expect, it } from "vitest";
import {
  bodyDigest,
  IdempotencyConflict,
  IdempotencyKeys,
  type KeyedStart,
} from "../../../../src/platform/tasks/idempotency.ts";
import type { Run } from "../../../../src/platform/tasks/model.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";

const scope = { taskId: "tsk_aaaaaaaaaaaaaaaaaaaaaaaa", principalId: "usr_bbbbbbbbbbbbbbbbbbbbbbbb" };
const HOUR_MS = 3_600_000;

function runNamed(id: string): Run {
  return { id } as Run;
}

/** The id of the run a key started now, or found it had started before. */
const idOf = (keyed: KeyedStart) => ("started" in keyed ? keyed.started.id : keyed.replayOf);

describe("IdempotencyKeys", () => {
  it("two starts racing with one key and body make one run", async () => {
    const keys = new IdempotencyKeys(new FakeTime().clock, HOUR_MS);
    let starts = 0;
    const start = async () => runNamed(`run_${++starts}`);
    const [a, b] = await Promise.all([
      keys.once(scope, "k", bodyDigest({ input: { n: 1 } }), start),
      keys.once(scope, "k", bodyDigest({ input: { n: 1 } }), start),
    ]);
    expect([idOf(a), idOf(b), starts]).toEqual(["run_1", "run_1", 1]);
  });

  it("refuses the key with another body, and keys are per task and per person", async () => {
    const keys = new IdempotencyKeys(new FakeTime().clock, HOUR_MS);
    await keys.once(scope, "k", bodyDigest({ input: { n: 1 } }), async () => runNamed("run_1"));
    await expect(
      keys.once(scope, "k", bodyDigest({ input: { n: 2 } }), async () => runNamed("run_2")),
    ).rejects.toBeInstanceOf(IdempotencyConflict);
    const other = { ...scope, principalId: "usr_cccccccccccccccccccccccc" };
    expect(
      idOf(await keys.once(other, "k", bodyDigest({ input: { n: 2 } }), async () => runNamed("run_3"))),
    ).toBe("run_3");
  });

  it("forgets a key after its window, and a refused start keeps none", async () => {
    const time = new FakeTime();
    const keys = new IdempotencyKeys(time.clock, HOUR_MS);
    await expect(
      keys.once(scope, "k", "d", async () => Promise.reject(new Error("refused"))),
    ).rejects.toThrow();
    expect(idOf(await keys.once(scope, "k", "d2", async () => runNamed("run_1")))).toBe("run_1");
    time.jump(HOUR_MS);
    expect(idOf(await keys.once(scope, "k", "d3", async () => runNamed("run_2")))).toBe("run_2");
  });

  it("a restored key answers its run without holding the run's result, and an expired one is not restored", async () => {
    const time = new FakeTime();
    const keys = new IdempotencyKeys(time.clock, HOUR_MS);
    const stored = (key: string, expiresInMs: number) =>
      ({
        id: `run_${key}`,
        taskId: scope.taskId,
        startedBy: scope.principalId,
        result: { content: [{ type: "text", text: "x".repeat(1000) }] },
        idempotency: { key, bodyDigest: "d", expiresAt: new Date(time.clock() + expiresInMs).toISOString() },
      }) as Run;
    keys.restore(stored("live", HOUR_MS));
    keys.restore(stored("gone", 0));
    expect(await keys.once(scope, "live", "d", async () => runNamed("run_new"))).toEqual({
      replayOf: "run_live",
    });
    expect(idOf(await keys.once(scope, "gone", "d", async () => runNamed("run_new")))).toBe("run_new");
  });

  it("remembers the id of the run a key started, not the run: a replay reads it afresh", async () => {
    // The reviewer's 200 starts with 1 MB inputs held 200 MB for the window, 5 runs kept.
    const keys = new IdempotencyKeys(new FakeTime().clock, HOUR_MS);
    const run = { id: "run_1", input: { pad: "x".repeat(1_000_000) } } as unknown as Run;
    const first = await keys.once(scope, "k", "d", async () => run);
    expect(first).toEqual({ started: run });
    expect(await keys.once(scope, "k", "d", async () => runNamed("run_2"))).toEqual({ replayOf: "run_1" });
  });

  it("a run removed (pruned, or with its task) takes its key with it, restored or started here", async () => {
    const time = new FakeTime();
    const keys = new IdempotencyKeys(time.clock, HOUR_MS);
    await keys.once(scope, "k", "d", async () => runNamed("run_1"));
    keys.restore({
      id: "run_0",
      taskId: scope.taskId,
      startedBy: scope.principalId,
      idempotency: { key: "old", bodyDigest: "d", expiresAt: new Date(time.clock() + HOUR_MS).toISOString() },
    } as Run);
    keys.forget(["run_1", "run_0"]);
    expect(idOf(await keys.once(scope, "k", "d", async () => runNamed("run_2")))).toBe("run_2");
    expect(idOf(await keys.once(scope, "old", "d", async () => runNamed("run_3")))).toBe("run_3");
  });

  it("digests a body whatever the order of its keys, and tells bodies apart", () => {
    expect(bodyDigest({ input: { a: 1, b: [1, { c: 2, d: 3 }] } })).toBe(
      bodyDigest({ input: { b: [1, { d: 3, c: 2 }], a: 1 } }),
    );
    expect(bodyDigest({ input: { a: 1 } })).not.toBe(bodyDigest({ input: { a: "1" } }));
    expect(bodyDigest({ input: undefined, retryOf: undefined })).toBe(bodyDigest({}));
  });
});
