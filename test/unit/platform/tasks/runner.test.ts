import type { CallToolResult } from "@modelcontextprotocol/client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { TASK_DEFAULTS } from "../../../../src/platform/tasks/config.ts";
import { newTaskId, type Task } from "../../../../src/platform/tasks/model.ts";
import { TaskRunner } from "../../../../src/platform/tasks/runner.ts";
import { TaskStore } from "../../../../src/platform/tasks/store.ts";
import type { ToolDispatch } from "../../../../src/sources/dispatch.ts";
import type { CallContext } from "../../../../src/sources/router.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { memoryLog } from "../../../helpers/memory-log.ts";
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

const dispatch = {
  call: async (_caller: unknown, _name: string, _args: unknown, context: CallContext) => {
    contexts.push(context);
    return { content: [{ type: "text", text: "done" }] } satisfies CallToolResult;
  },
} as unknown as ToolDispatch;

beforeEach(async () => {
  t = await openTempRoot("task-runner", owner);
  time = new FakeTime();
  contexts = [];
  store = new TaskStore(t.layout.partition("tasks"), t.layout, {
    clock: time.clock,
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
  return new TaskRunner({
    store,
    dispatch,
    results: { keep: async (_run, result) => ({ result }) },
    workspaces: { roleOf: () => "member" },
    users: { isDeactivated: () => false },
    events: { publish: () => undefined },
    clock: time.clock,
    timers: time.timers,
    settings: TASK_DEFAULTS,
    log: memoryLog().log,
  });
}

async function taskWithTimeout(timeoutSeconds: number): Promise<Task> {
  const now = new Date(time.clock()).toISOString();
  return store.create({
    id: newTaskId(),
    workspaceId: t.ws,
    ownerId: owner,
    name: "long",
    description: "",
    action: { tool: "remote__slow", arguments: {} },
    limits: { timeoutSeconds, maxConcurrentRuns: 1 },
    visibility: "private",
    createdAt: now,
    updatedAt: now,
  });
}

describe("a run's tool call", () => {
  it("may take the run's whole timeout, past the client library's 60 s, and no less", async () => {
    const tasks = runner();
    for (const timeoutSeconds of [1, 300, 3600]) {
      const run = await tasks.start(await taskWithTimeout(timeoutSeconds), {
        trigger: "manual",
        startedBy: owner,
        input: {},
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
