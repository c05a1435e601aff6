import { createServer, type Server, type Socket } from "node:net";
import type { CallToolResult } from "@modelcontextprotocol/client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AtriumEvent } from "../../../../src/kernel/events.ts";
import type { AuditAppender } from "../../../../src/platform/connections/call-audit.ts";
import { ConnectionSource } from "../../../../src/platform/connections/gate.ts";
import { RemoteSource } from "../../../../src/platform/connections/remote-source.ts";
import { toolDigest } from "../../../../src/platform/connections/snapshot.ts";
import { TASK_DEFAULTS } from "../../../../src/platform/tasks/config.ts";
import { newTaskId, type Run, type Task } from "../../../../src/platform/tasks/model.ts";
import { ConcurrencyLimit, type RunnerDeps, TaskRunner } from "../../../../src/platform/tasks/runner.ts";
import type { TaskSchedules } from "../../../../src/platform/tasks/schedule.ts";
import { TaskStore } from "../../../../src/platform/tasks/store.ts";
import { Tasks } from "../../../../src/platform/tasks/tasks.ts";
import type { ToolDispatch } from "../../../../src/sources/dispatch.ts";
import { McpSource } from "../../../../src/sources/mcp-source.ts";
import type { CallContext } from "../../../../src/sources/router.ts";
import { splitToolName } from "../../../../src/sources/tool-names.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { eventually } from "../../../helpers/eventually.ts";
import { FakeTime, settle } from "../../../helpers/fake-time.ts";
import { memoryLog } from "../../../helpers/memory-log.ts";
import { startRemoteServer } from "../../../helpers/remote-server.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// What a run hands the dispatch besides its tool: the run's id, the signal its timeout and
// cancel abort, and how long a remote source's client may wait — the run's whole timeout, so a
// remote tool is not cut at the MCP client library's own 60 s (test/integration/remote-source.test.ts
// holds McpSource to the timeout it is given).

const owner = `usr_${"a".repeat(24)}`;

let t: TempRoot;
let time: FakeTime;
let store: TaskStore;
let contexts: CallContext[];
/** What the latest runner announced. */
let published: AtriumEvent[];
/** What the latest runner logged. */
let logged: Record<string, unknown>[];

/** What the dispatch does with a call; each test may replace it. */
let answer: (name: string, args: Record<string, unknown>, context: CallContext) => Promise<CallToolResult>;

const call = async (_caller: unknown, name: string, args: Record<string, unknown>, context: CallContext) => {
  contexts.push(context);
  return answer(name, args, context);
};
// A run's call is held where a change ending its owner's access cancels it (ADR 0154); none comes
// here. Its tool is the call itself: it has ended when the call settles.
const callUntilAccessEnds = (...args: Parameters<typeof call>) => {
  const answered = call(...args);
  return Object.assign(answered, { toolSettled: answered.then(ignore, ignore) });
};
const ignore = () => undefined;
const dispatch = { call, callUntilAccessEnds } as unknown as ToolDispatch;

beforeEach(async () => {
  t = await openTempRoot("task-runner", owner);
  time = new FakeTime();
  contexts = [];
  answer = async () => ({ content: [{ type: "text", text: "done" }] });
  store = new TaskStore(t.layout.partition("tasks"), t.layout, {
    clock: time.clock,
    log: memoryLog().log,
    idempotencyWindowMs: 3_600_000,
    idleMs: 60_000,
    results: { discard: async () => true },
  });
});

afterEach(async () => {
  await store.close();
  await t.remove();
});

function runner(): TaskRunner {
  return new TaskRunner(runnerDeps(store));
}

function runnerDeps(over: TaskStore): RunnerDeps {
  const { log, lines } = memoryLog();
  logged = lines;
  published = [];
  return {
    store: over,
    dispatch,
    results: { keep: async (_run, result) => ({ result }) },
    workspaces: { roleOf: () => "member" },
    users: { isDeactivated: () => false },
    events: { publish: (event) => published.push(event) },
    clock: time.clock,
    timers: time.timers,
    settings: TASK_DEFAULTS,
    log,
  };
}

async function taskWithTimeout(
  timeoutSeconds: number,
  action = { tool: "remote__slow", arguments: {} },
): Promise<Task> {
  const now = new Date(time.clock()).toISOString();
  return store.create(
    {
      id: newTaskId(),
      workspaceId: t.ws,
      ownerId: owner,
      name: "long",
      description: "",
      action,
      limits: { timeoutSeconds, maxConcurrentRuns: 1 },
      visibility: "private",
      createdAt: now,
      updatedAt: now,
    },
    NO_CALLER,
  );
}

/**
 * Starts a run of `task` (a 1 s limit) whose call will not answer by then: it is recorded timed
 * out when the limit fires, whether or not the call has ended.
 */
async function expectTimedOutAtItsLimit(tasks: TaskRunner, task: Task): Promise<void> {
  const run = await tasks.start(task, { trigger: "manual", startedBy: owner, input: {}, access: NO_CALLER });
  await settle();
  expect(tasks.inFlight(task.id)).toBe(1);
  await time.advance(1000);
  await tasks.settled(run.id);
  expect((await store.run(t.ws, run.id))?.execution).toMatchObject({
    status: "timed_out",
    error: { code: "timed_out" },
  });
}

const start = (tasks: TaskRunner, task: Task) =>
  tasks.start(task, { trigger: "manual", startedBy: owner, input: {}, access: NO_CALLER });

describe("a run's tool call", () => {
  it("may take the run's whole timeout, past the client library's 60 s, and no less", async () => {
    const tasks = runner();
    for (const timeoutSeconds of [1, 300, 3600]) {
      const run = await tasks.start(await taskWithTimeout(timeoutSeconds), {
        trigger: "manual",
        startedBy: owner,
        input: {},
        access: NO_CALLER,
      });
      await tasks.settled(run.id);
      const context = contexts.at(-1);
      expect(context?.requestId).toBe(run.id);
      expect(context?.signal).toBeInstanceOf(AbortSignal);
      // Longer than the run's own timer, so that timer ends the call (recorded timed_out).
      expect(context?.timeoutMs).toBeGreaterThan(timeoutSeconds * 1000);
      expect(context?.timeoutMs).toBeLessThanOrEqual(timeoutSeconds * 1000 + 5000);
    }
  });
});

describe("a run whose tool stops answering", () => {
  it("a call that ignores its signal ends timed out at the run's limit, and holds the task's slot until it settles: a next run never overlaps it", async () => {
    const tasks = runner();
    let finishCall: () => void = () => undefined;
    answer = () =>
      new Promise((resolve) => {
        finishCall = () => resolve({ content: [{ type: "text", text: "late" }] });
      });
    const task = await taskWithTimeout(1);
    await expectTimedOutAtItsLimit(tasks, task);
    // maxConcurrentRuns is 1 and the first call is still going: a second would run beside it.
    expect(tasks.inFlight(task.id)).toBe(1);
    await expect(start(tasks, task)).rejects.toBeInstanceOf(ConcurrencyLimit);
    finishCall();
    await settle();
    expect(tasks.inFlight(task.id)).toBe(0);
    answer = async () => ({ content: [{ type: "text", text: "done" }] });
    const next = await start(tasks, task);
    await tasks.settled(next.id);
    expect((await store.run(t.ws, next.id))?.execution.status).toBe("succeeded");
  });

  it("a call that never answers frees its slot a minute after its run timed out, logged, so the task is not stuck for ever", async () => {
    const tasks = runner();
    answer = () => new Promise<never>(() => undefined);
    const task = await taskWithTimeout(1);
    await expectTimedOutAtItsLimit(tasks, task);
    await time.advance(30_000);
    expect(tasks.inFlight(task.id)).toBe(1);
    await time.advance(30_000);
    expect(tasks.inFlight(task.id)).toBe(0);
    expect(logged).toContainEqual(
      expect.objectContaining({ level: 40, taskId: task.id, tool: "remote__slow" }),
    );
  });

  it("a remote tool whose server turned into a listener that never replies ends timed out at the run's limit", async () => {
    // The reviewer's case: the gate's cached tool list is stale, so the call waits on a re-list
    // that a TCP listener which never replies leaves hanging (≈ requestTimeoutSeconds, up to 300 s).
    const remote = await startRemoteServer();
    const live = new RemoteSource(
      new McpSource("remote", { kind: "streamable-http", url: remote.url, listMaxAgeMs: 1000 }, time.clock),
      () => [],
    );
    const tools = await live.listTools();
    const connection = new ConnectionSource(
      "remote",
      {
        version: 1,
        takenAt: new Date(time.clock()).toISOString(),
        generation: 0,
        protocolVersion: (await live.describe()).protocolVersion as string,
        tools,
        digests: Object.fromEntries(tools.map((tool) => [tool.name, toolDigest(tool)])),
        digest: "",
      },
      live,
      { credentialLapsed: () => false },
      { append: async () => ({}) } as unknown as AuditAppender,
    );
    const caller = { principalId: owner, workspaceId: t.ws, access: NO_CALLER };
    answer = (name, args, context) =>
      connection.callTool(splitToolName(name)?.tool ?? name, args, caller, context);
    let silent: Server | undefined;
    const sockets = new Set<Socket>();
    try {
      const tasks = runner();
      const task = await taskWithTimeout(1, { tool: "remote__echo", arguments: { text: "hi" } });
      const first = await tasks.start(task, {
        trigger: "manual",
        startedBy: owner,
        input: {},
        access: NO_CALLER,
      });
      await tasks.settled(first.id);
      expect((await store.run(t.ws, first.id))?.execution.status).toBe("succeeded");

      await remote.kill();
      silent = createServer((socket) => {
        sockets.add(socket);
      });
      await new Promise<void>((resolve) => silent?.listen(Number(remote.url.port), "127.0.0.1", resolve));
      await time.advance(60_000);
      await expectTimedOutAtItsLimit(tasks, task);
      // The gate hears the cancel: the call settles at once, freeing the slot.
      await eventually(() => expect(tasks.inFlight(task.id)).toBe(0));
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => (silent ? silent.close(() => resolve()) : resolve()));
      await connection.close().catch(() => undefined);
      await remote.stop();
    }
  });
});

describe("a run whose end cannot be written", () => {
  /** Makes every write of a run's record fail, as a full disk does, until `heal` is called. */
  function failRunWrites(target: TaskStore): { heal(): void } {
    const write = target.updateRun.bind(target);
    let failing = true;
    target.updateRun = async (run, change) => {
      if (failing)
        throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
      return write(run, change);
    };
    return {
      heal: () => {
        failing = false;
      },
    };
  }

  /** The tasks as a member reads them, over this store and runner. */
  function readerOf(tasks: TaskRunner): Tasks {
    return new Tasks(
      store,
      tasks,
      { shown: async (run) => run },
      {} as TaskSchedules,
      { roleOf: () => "member" },
      { isDeactivated: () => false },
      TASK_DEFAULTS,
      time.clock,
    );
  }

  it("is answered as it ended while the write is tried again, never recorded interrupted meanwhile, and recorded as it ended once the disk takes it", async () => {
    const disk = failRunWrites(store);
    const tasks = runner();
    answer = async () => ({ content: [{ type: "text", text: "the secret output" }] });
    const task = await taskWithTimeout(60);
    const run = await tasks.start(task, {
      trigger: "manual",
      startedBy: owner,
      input: {},
      access: NO_CALLER,
    });
    await settle();
    const asker = { workspaceId: t.ws, principalId: owner };
    expect((await readerOf(tasks).getRun(asker, run.id)).execution.status).toBe("succeeded");
    expect((await readerOf(tasks).runs(asker, task.id, {})).runs.map((r) => r.execution.status)).toEqual([
      "succeeded",
    ]);
    expect((await store.run(t.ws, run.id))?.execution.status).toBe("running");
    // Logged as an error, without what the run's tool answered.
    const failure = logged.find((line) => line.runId === run.id && line.level === 50);
    expect(failure).toBeDefined();
    expect(JSON.stringify(logged)).not.toContain("the secret output");
    // A read of the workspace's runs that finds it `running` (after an idle eviction) leaves it be.
    const onDisk = (await store.run(t.ws, run.id)) as Run;
    expect(await tasks.interruptLeftovers([{ run: onDisk, task }])).toEqual([]);
    disk.heal();
    await time.advance(60_000);
    await tasks.settled(run.id);
    // Recorded as it ended: at the instant its call did, not when the write at last went through.
    expect(await store.run(t.ws, run.id)).toMatchObject({
      execution: { status: "succeeded" },
      endedAt: run.startedAt,
      result: { content: [{ type: "text", text: "the secret output" }] },
    });
  });

  it("a cancel while the end cannot be written answers from memory, not after the write", async () => {
    const disk = failRunWrites(store);
    const tasks = runner();
    // A call that ends only when cancelled.
    answer = (_name, _args, context) =>
      new Promise((_resolve, reject) =>
        context.signal?.addEventListener("abort", () => reject(context.signal?.reason)),
      );
    const task = await taskWithTimeout(60);
    const run = await tasks.start(task, {
      trigger: "manual",
      startedBy: owner,
      input: {},
      access: NO_CALLER,
    });
    await settle();
    const asker = { workspaceId: t.ws, principalId: owner };
    const cancelled = await readerOf(tasks).cancelRun(asker, run.id);
    expect(cancelled.execution.status).toBe("cancelled");
    expect((await store.run(t.ws, run.id))?.execution.status).toBe("running");
    disk.heal();
    await time.advance(60_000);
    await tasks.settled(run.id);
    expect((await store.run(t.ws, run.id))?.execution.status).toBe("cancelled");
  });

  it("a stop gives up on it and leaves the workspace's crash mark: the next boot records the run interrupted", async () => {
    const disk = failRunWrites(store);
    const tasks = runner();
    const task = await taskWithTimeout(60);
    const run = await tasks.start(task, {
      trigger: "manual",
      startedBy: owner,
      input: {},
      access: NO_CALLER,
    });
    await settle();
    await store.close(await tasks.stop());
    disk.heal();
    expect(await store.index.runningMarks()).toEqual([t.ws]);
    expect(logged).toContainEqual(
      expect.objectContaining({ runId: run.id, execution: "succeeded", level: 50 }),
    );

    const rebooted = new TaskStore(t.layout.partition("tasks"), t.layout, {
      clock: time.clock,
      log: memoryLog().log,
      idempotencyWindowMs: 3_600_000,
      idleMs: 60_000,
      results: { discard: async () => true },
    });
    const next = new TaskRunner(runnerDeps(rebooted));
    rebooted.onLoad({
      loaded: async () => undefined,
      unfinished: async (found) => void (await next.interruptLeftovers(found)),
      orphaned: () => undefined,
    });
    await rebooted.boot(
      () => [t.ws],
      () => true,
    );
    expect((await rebooted.run(t.ws, run.id))?.execution.status).toBe("interrupted");
    await rebooted.close();
  });
});

describe("a run whose start races a graceful stop", () => {
  it("the stop waits for it and records it interrupted, and its tool is never called", async () => {
    const tasks = runner();
    const task = await taskWithTimeout(60);
    // Past the stop's check, its record being written, when the stop begins.
    const starting = start(tasks, task);
    await tasks.stop();
    const run = await starting;
    expect((await store.run(t.ws, run.id))?.execution).toMatchObject({
      status: "interrupted",
      error: { code: "interrupted" },
    });
    await settle();
    expect(contexts).toEqual([]);
  });
});

describe("a result that cannot be kept", () => {
  it("ends the run with a note naming the run, logged, and rejects nothing", async () => {
    const tasks = new TaskRunner({
      ...runnerDeps(store),
      results: {
        keep: async () => {
          throw new TypeError("Do not know how to serialize a BigInt");
        },
      },
    });
    const run = await start(tasks, await taskWithTimeout(60));
    await tasks.settled(run.id);
    const ended = await store.run(t.ws, run.id);
    expect(ended?.execution.status).toBe("succeeded");
    expect(ended?.resultNote).toBe(`The result could not be kept; it is logged under ${run.id}.`);
    expect(logged).toContainEqual(
      expect.objectContaining({ msg: "task run's result could not be kept", runId: run.id }),
    );
  });
});

describe("a run's end", () => {
  it("is announced to the task's owner alone when the task was deleted while it ran, shared as it was", async () => {
    const tasks = runner();
    answer = (_name, _args, context) =>
      new Promise((_resolve, reject) =>
        context.signal?.addEventListener("abort", () => reject(context.signal?.reason)),
      );
    const task = (await store.update(
      await taskWithTimeout(60),
      (current) => ({
        ...current,
        visibility: "shared",
      }),
      NO_CALLER,
    )) as Task;
    const run = await start(tasks, task);
    await settle();
    await store.delete(
      task,
      () => undefined,
      NO_CALLER,
      async (runIds) => {
        for (const runId of runIds) if (tasks.cancel(runId)) await tasks.settled(runId);
      },
    );
    const [started, finished] = published.filter((event) => "run" in event && event.run.id === run.id);
    expect(started).toMatchObject({ type: "task.run.started" });
    expect(started).not.toHaveProperty("ownerId");
    expect(finished).toMatchObject({
      type: "task.run.finished",
      ownerId: owner,
      run: { execution: "cancelled" },
    });
  });
});

describe("a task's kept runs", () => {
  /** A runner keeping one run per task, and a task two runs of which may go at once. */
  async function keepingOne(): Promise<{ tasks: TaskRunner; task: Task }> {
    const tasks = new TaskRunner({
      ...runnerDeps(store),
      settings: { ...TASK_DEFAULTS, runsKeptPerTask: 1 },
    });
    const task = (await store.update(
      await taskWithTimeout(60),
      (current) => ({
        ...current,
        limits: { ...current.limits, maxConcurrentRuns: 2 },
      }),
      NO_CALLER,
    )) as Task;
    return { tasks, task };
  }

  /** Each call waits until `release` answers every call waiting. */
  function heldAnswers(): { release: () => void } {
    const waiting: (() => void)[] = [];
    answer = () =>
      new Promise((resolve) => waiting.push(() => resolve({ content: [{ type: "text", text: "done" }] })));
    return {
      release: () => {
        for (const resolve of waiting.splice(0)) resolve();
      },
    };
  }

  it("two runs ending together keep the newer: each prune counts the other, its end on disk, and spares only its own run", async () => {
    const { tasks, task } = await keepingOne();
    const { release } = heldAnswers();
    const older = await start(tasks, task);
    time.jump(1000);
    const newer = await start(tasks, task);
    await settle();
    release();
    await Promise.all([tasks.settled(older.id), tasks.settled(newer.id)]);
    // The run that just ended is never pruned by its own end (ADR 0171's amendment): the older
    // stays when its prune came last, one past the limit until the next run's end.
    const ids = await store.runIds(task);
    expect(ids[0]).toBe(newer.id);
    expect(ids.filter((id) => id !== newer.id && id !== older.id)).toEqual([]);
    const next = heldAnswers();
    time.jump(1000);
    const third = await start(tasks, task);
    await settle();
    next.release();
    await tasks.settled(third.id);
    expect(await store.runIds(task)).toEqual([third.id]);
  });

  it("a run still going neither counts nor is pruned: the one finished beside it is kept until a newer one ends", async () => {
    const { tasks, task } = await keepingOne();
    const held = heldAnswers();
    const first = await start(tasks, task);
    await settle();
    const second = heldAnswers();
    time.jump(1000);
    const going = await start(tasks, task);
    await settle();
    held.release();
    await tasks.settled(first.id);
    expect(await store.runIds(task)).toEqual([going.id, first.id]);
    second.release();
    await tasks.settled(going.id);
    expect(await store.runIds(task)).toEqual([going.id]);
  });
});
