import { readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import * as z from "zod";
import type { PlatformApp } from "../../src/platform/app.ts";
import { AppTools } from "../../src/platform/app-tools.ts";
import { PLATFORM_APPS } from "../../src/platform/index.ts";
import type { NotificationView } from "../../src/platform/notifications/model.ts";
import { platformInput } from "../../src/platform/platform-tool.ts";
import type { Run, Task } from "../../src/platform/tasks/model.ts";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { eventually } from "../helpers/eventually.ts";
import { FakeTime, settle } from "../helpers/fake-time.ts";
import { MCP_ERAS } from "../helpers/mcp-eras.ts";
import { addMember } from "../helpers/members.ts";
import { type SseFrame, SseReader } from "../helpers/sse.ts";

// Tasks over real HTTP with the injected clock: the scheduler's instants are the fake clock's,
// so a test moves time by days without waiting. The tools a task calls are a throwaway platform
// app's (a real McpServer on the in-memory arm): one answers what it is told, one hangs until its
// call is cancelled, one writes.

const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;

/** What the probe's tools saw: who called, and how many hanging calls were cancelled. */
const probe = { calls: [] as { tool: string; principalId: string }[], hanging: 0, cancelled: 0 };

const probeApp: PlatformApp = {
  name: "probe",
  start() {
    const tools = new AppTools("probe");
    tools.registerTool(
      "echo",
      {
        description: "Answer `reply` as the structured output.",
        inputSchema: platformInput({ reply: z.record(z.string(), z.unknown()).optional() }),
        annotations: { readOnlyHint: true },
      },
      async (caller, args: { reply?: Record<string, unknown> }) => {
        probe.calls.push({ tool: "echo", principalId: caller.principalId });
        const reply = args.reply ?? {};
        return { content: [{ type: "text", text: JSON.stringify(reply) }], structuredContent: reply };
      },
    );
    tools.registerTool(
      "hang",
      {
        description: "Wait until cancelled.",
        inputSchema: platformInput({}),
        annotations: { readOnlyHint: true },
      },
      async (caller, _args, call) => {
        probe.calls.push({ tool: "hang", principalId: caller.principalId });
        probe.hanging++;
        await new Promise<void>((resolve) =>
          call.signal?.addEventListener("abort", () => resolve(), { once: true }),
        );
        probe.cancelled++;
        return { content: [{ type: "text", text: "stopped" }] };
      },
    );
    tools.registerTool(
      "write",
      {
        description: "Change something.",
        inputSchema: platformInput({}),
        annotations: { readOnlyHint: false },
      },
      async (caller) => {
        probe.calls.push({ tool: "write", principalId: caller.principalId });
        return { content: [{ type: "text", text: "written" }] };
      },
    );
    return { tools };
  },
};

const APPS = [...PLATFORM_APPS, probeApp];
const alice = testPrincipal("alice").id;
const bob = testPrincipal("bob").id;
const carl = testPrincipal("carl").id;

async function startAt(startMs: number): Promise<{ instance: TestAtrium; time: FakeTime; ws: string }> {
  const time = new FakeTime(startMs);
  const instance = await startTestAtrium({ apps: APPS, clock: time.clock, timers: time.timers });
  return { instance, time, ws: await bootstrapWorkspace(instance, "alice") };
}

function tasksPath(ws: string, rest = ""): string {
  return `/v1/workspaces/${ws}/tasks${rest}`;
}

async function createTask(instance: TestAtrium, user: string, ws: string, body: Record<string, unknown>) {
  const response = await instance.rest(user, "POST", tasksPath(ws), body);
  expect(response.status, await response.clone().text()).toBe(201);
  return (await response.json()) as Task;
}

async function startRun(instance: TestAtrium, user: string, ws: string, taskId: string, body = {}) {
  const response = await instance.rest(user, "POST", tasksPath(ws, `/${taskId}/runs`), body);
  expect(response.status, await response.clone().text()).toBe(201);
  return (await response.json()) as Run;
}

async function runsOf(instance: TestAtrium, user: string, ws: string, taskId: string): Promise<Run[]> {
  const response = await instance.rest(user, "GET", tasksPath(ws, `/${taskId}/runs?limit=100`));
  expect(response.status).toBe(200);
  return ((await response.json()) as { runs: Run[] }).runs;
}

/** The run once it has ended (its call is async to the request that started it). */
async function ended(instance: TestAtrium, user: string, ws: string, run: Pick<Run, "id" | "taskId">) {
  let seen: Run | undefined;
  await eventually(async () => {
    const response = await instance.rest(user, "GET", tasksPath(ws, `/${run.taskId}/runs/${run.id}`));
    seen = (await response.json()) as Run;
    expect(seen.execution.status).not.toBe("running");
  });
  return seen as Run;
}

async function inbox(instance: TestAtrium, user: string, ws: string): Promise<NotificationView[]> {
  const response = await instance.rest(user, "GET", `/v1/workspaces/${ws}/notifications`);
  return ((await response.json()) as { notifications: NotificationView[] }).notifications;
}

/**
 * Alice's runs of the task once there are `count` and all have ended: a scheduled start is
 * written after its fire, and a task runs one at a time unless its limits say otherwise.
 */
async function scheduled(instance: TestAtrium, ws: string, taskId: string, count: number): Promise<Run[]> {
  let runs: Run[] = [];
  await eventually(async () => {
    runs = await runsOf(instance, "alice", ws, taskId);
    expect(runs).toHaveLength(count);
    expect(runs.filter((run) => run.execution.status === "running")).toEqual([]);
    // The fire's job ends by recording its instant on the task; then the next may be due.
    const task = (await (await instance.rest("alice", "GET", tasksPath(ws, `/${taskId}`))).json()) as Task;
    expect(task.lastScheduledAt).toBe(runs[0]?.scheduledFor);
  });
  await settle();
  return runs;
}

const echo = (reply: Record<string, unknown> = {}) => ({ tool: "probe__echo", arguments: { reply } });

describe("triggers", () => {
  let instance: TestAtrium | undefined;
  afterEach(async () => {
    await instance?.stop();
    instance = undefined;
  });

  it("a cron trigger fires at the right instants across a time-zone DST change", async () => {
    // Europe/Paris moves from UTC+1 to UTC+2 on Sunday 2026-03-29: 09:00 there is 08:00Z before, 07:00Z after.
    const started = await startAt(Date.UTC(2026, 2, 27, 12));
    instance = started.instance;
    const task = await createTask(instance, "alice", started.ws, {
      name: "morning digest",
      action: echo({ ok: true }),
      trigger: { cron: "0 9 * * *", timezone: "Europe/Paris" },
    });
    for (const count of [1, 2, 3, 4]) {
      await started.time.advance(DAY_MS);
      await scheduled(instance, started.ws, task.id, count);
    }
    const runs = await runsOf(instance, "alice", started.ws, task.id);
    expect(runs.map((run) => [run.trigger, run.scheduledFor])).toEqual([
      ["schedule", "2026-03-31T07:00:00.000Z"],
      ["schedule", "2026-03-30T07:00:00.000Z"],
      ["schedule", "2026-03-29T07:00:00.000Z"],
      ["schedule", "2026-03-28T08:00:00.000Z"],
    ]);
    expect(runs.every((run) => run.execution.status === "succeeded")).toBe(true);
  });

  it("an interval trigger runs once per interval, as the task's owner", async () => {
    const started = await startAt(Date.UTC(2026, 0, 1));
    instance = started.instance;
    const task = await createTask(instance, "alice", started.ws, {
      name: "heartbeat",
      action: echo(),
      trigger: { everySeconds: 3600 },
    });
    await started.time.advance(HOUR_MS - 1);
    await settle();
    expect(await runsOf(instance, "alice", started.ws, task.id)).toEqual([]);
    // An hour at a time: a fire's start is written to disk before the next hour is due.
    for (const count of [1, 2, 3]) {
      await started.time.advance(count === 1 ? 1 : HOUR_MS);
      await scheduled(instance, started.ws, task.id, count);
    }
    const runs = await runsOf(instance, "alice", started.ws, task.id);
    expect(runs.map((run) => run.scheduledFor)).toEqual([
      "2026-01-01T03:00:00.000Z",
      "2026-01-01T02:00:00.000Z",
      "2026-01-01T01:00:00.000Z",
    ]);
    expect(runs.every((run) => run.startedBy === alice && run.ownerId === alice)).toBe(true);
  });

  it("missed schedules while down run once at boot, saying which instants they stand for", async () => {
    const started = await startAt(Date.UTC(2026, 0, 1, 0, 30));
    instance = started.instance;
    const task = await createTask(instance, "alice", started.ws, {
      name: "hourly",
      action: echo(),
      trigger: { cron: "0 * * * *", timezone: "UTC" },
    });
    await started.time.advance(HOUR_MS);
    const [first] = await scheduled(instance, started.ws, task.id, 1);
    expect(first?.scheduledFor).toBe("2026-01-01T01:00:00.000Z");
    await ended(instance, "alice", started.ws, first as Run);
    await instance.close();
    // Down from 01:30 to 06:10: the schedules of 02:00 to 06:00 were missed.
    started.time.jump(4 * HOUR_MS + 40 * 60 * 1000);
    instance = await instance.restart();
    const runs = await runsOf(instance, "alice", started.ws, task.id);
    expect(runs).toHaveLength(2);
    expect(runs[0]).toMatchObject({
      trigger: "schedule",
      scheduledFor: "2026-01-01T06:00:00.000Z",
      missedSince: "2026-01-01T02:00:00.000Z",
    });
    // And the schedule goes on from there, not from the missed instants.
    await started.time.advance(50 * 60 * 1000);
    expect((await scheduled(instance, started.ws, task.id, 3)).map((run) => run.scheduledFor)).toEqual([
      "2026-01-01T07:00:00.000Z",
      "2026-01-01T06:00:00.000Z",
      "2026-01-01T01:00:00.000Z",
    ]);
  });
});

describe("runs", () => {
  let instance: TestAtrium;
  let time: FakeTime;
  let ws: string;

  beforeAll(async () => {
    ({ instance, time, ws } = await startAt(Date.UTC(2026, 0, 1)));
    await addMember(instance.rest, "alice", ws, "bob", { principalId: bob });
  });

  afterAll(async () => {
    await instance?.stop();
  });

  it("records execution and assessment apart: output violating the schema is succeeded + rejected", async () => {
    const outputSchema = {
      type: "object",
      required: ["count"],
      properties: { count: { type: "integer" } },
    };
    const wrong = await createTask(instance, "alice", ws, {
      name: "count",
      action: echo({ count: "many" }),
      outputSchema,
    });
    const rejected = await ended(instance, "alice", ws, await startRun(instance, "alice", ws, wrong.id));
    expect(rejected.execution).toEqual({ status: "succeeded" });
    expect(rejected.assessment).toEqual({ status: "rejected", errors: ["/count must be integer"] });
    expect(rejected.result?.structuredContent).toEqual({ count: "many" });
    await eventually(async () =>
      expect(await inbox(instance, "alice", ws)).toContainEqual(
        expect.objectContaining({
          source: "tasks",
          to: alice,
          data: { taskId: wrong.id, runId: rejected.id },
        }),
      ),
    );

    const right = await createTask(instance, "alice", ws, {
      name: "count",
      action: echo({ count: 3 }),
      outputSchema,
    });
    const accepted = await ended(instance, "alice", ws, await startRun(instance, "alice", ws, right.id));
    expect([accepted.execution.status, accepted.assessment.status]).toEqual(["succeeded", "accepted"]);
    const unassessed = await createTask(instance, "alice", ws, { name: "free", action: echo({ any: 1 }) });
    const free = await ended(instance, "alice", ws, await startRun(instance, "alice", ws, unassessed.id));
    expect([free.execution.status, free.assessment.status]).toEqual(["succeeded", "not_assessed"]);
  });

  it("a run's input is checked against the input schema and merged into the arguments", async () => {
    const task = await createTask(instance, "alice", ws, {
      name: "greet",
      action: { tool: "probe__echo", arguments: { reply: { from: "default" } } },
      inputSchema: { type: "object", properties: { reply: { type: "object" } }, additionalProperties: false },
    });
    const refused = await instance.rest("alice", "POST", tasksPath(ws, `/${task.id}/runs`), {
      input: { reply: 5 },
    });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: { code: "invalid_input" } });
    expect(await runsOf(instance, "alice", ws, task.id)).toEqual([]);
    const run = await startRun(instance, "alice", ws, task.id, { input: { reply: { from: "input" } } });
    expect((await ended(instance, "alice", ws, run)).result?.structuredContent).toEqual({ from: "input" });
  });

  it("matches a schema pattern in linear time: the ^(a+)+$ that froze the server answers a long near-match with 400", async () => {
    const task = await createTask(instance, "alice", ws, {
      name: "evil pattern",
      action: echo(),
      inputSchema: { type: "object", properties: { a: { type: "string", pattern: "^(a+)+$" } } },
    });
    const refused = await instance.rest("alice", "POST", tasksPath(ws, `/${task.id}/runs`), {
      input: { a: `${"a".repeat(100_000)}!` },
    });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({
      error: { code: "invalid_input", message: expect.stringContaining('/a must match pattern "^(a+)+$"') },
    });
  });

  it("refuses a run input too costly to check against its patterns with 400, before matching, naming what to change", async () => {
    // The reviewer's schema: 996 RE2 instructions, under the per-pattern cap; 2 MiB of random a/b
    // held the event loop ≈ 20 s before this budget (ADR 0104). 200,000 characters is over it too.
    const task = await createTask(instance, "alice", ws, {
      name: "costly pattern",
      action: echo(),
      inputSchema: { type: "object", properties: { s: { type: "string", pattern: "[ab]*a[ab]{990}[cd]" } } },
    });
    const refused = await instance.rest("alice", "POST", tasksPath(ws, `/${task.id}/runs`), {
      input: { s: "ab".repeat(100_000) },
    });
    expect(refused.status).toBe(400);
    const { error } = (await refused.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe("invalid_input");
    expect(error.message).toContain("The input is too costly to check against the task's inputSchema");
    expect(error.message).toContain(
      'the pattern "[ab]*a[ab]{990}[cd]" (996 instructions) on a string of 200,000 characters',
    );
    expect(error.message).toContain("send a shorter string");
    expect(await runsOf(instance, "alice", ws, task.id)).toEqual([]);
    // A string the budget allows is checked as before.
    const checked = await instance.rest("alice", "POST", tasksPath(ws, `/${task.id}/runs`), {
      input: { s: "ab".repeat(1000) },
    });
    expect(checked.status).toBe(400);
    expect(await checked.json()).toMatchObject({
      error: { message: expect.stringContaining('/s must match pattern "[ab]*a[ab]{990}[cd]"') },
    });
  });

  it("refuses a run input whose unions would try too many branches with 400, naming the union and what to change", async () => {
    // The reviewer's schema: an anyOf of 40 consts per item. 699,047 items matching only the
    // 40th (a 2 MiB body) made 28 million ajv errors, 2-4 s of held event loop (ADR 0157).
    const task = await createTask(instance, "alice", ws, {
      name: "costly union",
      action: echo(),
      inputSchema: {
        type: "object",
        properties: {
          a: { type: "array", items: { anyOf: Array.from({ length: 40 }, (_, i) => ({ const: i })) } },
        },
      },
    });
    const body = `{"input":{"a":[${new Array(699_047).fill("39").join(",")}]}}`;
    const refused = await instance.rest("alice", "POST", tasksPath(ws, `/${task.id}/runs`), body, {
      "content-type": "application/json",
    });
    expect(refused.status).toBe(400);
    const { error } = (await refused.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe("invalid_input");
    expect(error.message).toContain("The input is too costly to check against the task's inputSchema");
    expect(error.message).toContain('the anyOf at "#/properties/a/items/anyOf" went past it');
    expect(error.message).toContain("an enum instead of an anyOf of consts");
    expect(await runsOf(instance, "alice", ws, task.id)).toEqual([]);
    // A list the budget allows is checked as before.
    const checked = await instance.rest("alice", "POST", tasksPath(ws, `/${task.id}/runs`), {
      input: { a: [39, 40] },
    });
    expect(checked.status).toBe(400);
    expect(await checked.json()).toMatchObject({
      error: {
        message: expect.stringContaining(
          "The input does not match the task's inputSchema: /a/1 must be equal to constant",
        ),
      },
    });
  });

  it("refuses with 400 a triggered task whose inputSchema is too costly to check even against its empty input", async () => {
    // 20 levels of $defs, each an anyOf of two $refs to the next: 2^20 branches for any value. The
    // empty-input check at definition ran outside the budget's catch and answered 500 (review).
    const defs: Record<string, unknown> = { a20: { type: "string" } };
    for (let i = 0; i < 20; i++)
      defs[`a${i}`] = { anyOf: [{ $ref: `#/$defs/a${i + 1}` }, { $ref: `#/$defs/a${i + 1}` }] };
    const refused = await instance.rest("alice", "POST", tasksPath(ws), {
      name: "costly trigger",
      action: echo(),
      trigger: { everySeconds: 3600 },
      inputSchema: { $defs: defs, anyOf: [{ $ref: "#/$defs/a0" }, { type: "object" }] },
    });
    expect(refused.status).toBe(400);
    const { error } = (await refused.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe("invalid_input");
    expect(error.message).toContain("too costly to check against an empty input");
  });

  it("refuses at definition a schema that loops and a cron that fires too often or never, on create and on change", async () => {
    const task = await createTask(instance, "alice", ws, { name: "plain", action: echo() });
    const refusals: [Record<string, unknown>, string][] = [
      [{ inputSchema: { $ref: "#" } }, '"inputSchema" applies the schema at "#" to the same value again'],
      [{ outputSchema: { $ref: "#" } }, '"outputSchema" applies the schema at "#" to the same value again'],
      [
        { inputSchema: { type: "object", properties: { a: { type: "string", pattern: "^(?!x)" } } } },
        'the pattern "^(?!x)" cannot be matched in linear time',
      ],
      [{ trigger: { cron: "* * * * * *", timezone: "UTC" } }, "tasks.minIntervalSeconds"],
      [{ trigger: { cron: "0 0 30 2 *", timezone: "UTC" } }, "never fires"],
    ];
    for (const [change, words] of refusals) {
      for (const [method, path, body] of [
        ["POST", tasksPath(ws), { name: "x", action: echo(), ...change }],
        ["PATCH", tasksPath(ws, `/${task.id}`), change],
      ] as const) {
        const response = await instance.rest("alice", method, path, body);
        expect(response.status, `${method} ${JSON.stringify(change)}`).toBe(400);
        expect(await response.json()).toMatchObject({
          error: { code: "invalid_input", message: expect.stringContaining(words) },
        });
      }
    }
  });

  it("idempotent start: the same key and body is one run; the same key with another body is 409", async () => {
    const task = await createTask(instance, "alice", ws, {
      name: "once",
      action: echo(),
      inputSchema: { type: "object", properties: { n: { type: "integer" } } },
    });
    const path = tasksPath(ws, `/${task.id}/runs`);
    const headers = { "idempotency-key": "k-123" };
    const first = await instance.rest("alice", "POST", path, { input: { n: 1 } }, headers);
    const again = await instance.rest("alice", "POST", path, { input: { n: 1 } }, headers);
    expect([first.status, again.status]).toEqual([201, 201]);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const [one, two] = [(await first.json()) as Run, (await again.json()) as Run];
    expect(two.id).toBe(one.id);
    const conflict = await instance.rest("alice", "POST", path, { input: { n: 2 } }, headers);
    expect(conflict.status).toBe(409);
    expect(await conflict.json()).toMatchObject({ error: { code: "idempotency_conflict" } });
    expect((await runsOf(instance, "alice", ws, task.id)).map((run) => run.id)).toEqual([one.id]);
    const badKey = await instance.rest("alice", "POST", path, { input: { n: 1 } }, { "idempotency-key": "" });
    expect(badKey.status).toBe(400);
    await ended(instance, "alice", ws, one);
    // No input and an empty one start the same run: one request, not a conflict.
    const empty = { "idempotency-key": "k-empty" };
    const bare = await instance.rest("alice", "POST", path, {}, empty);
    const explicit = await instance.rest("alice", "POST", path, { input: {} }, empty);
    expect([bare.status, explicit.status, explicit.headers.get("idempotent-replayed")]).toEqual([
      201,
      201,
      "true",
    ]);
    await ended(instance, "alice", ws, (await bare.json()) as Run);
    // Past the window (24 hours by default) the key is forgotten: it starts a new run.
    await time.advance(24 * HOUR_MS + 1);
    const later = (await (
      await instance.rest("alice", "POST", path, { input: { n: 2 } }, headers)
    ).json()) as Run;
    expect(later.id).not.toBe(one.id);
    await ended(instance, "alice", ws, later);
  });

  it("a timeout ends the run timed_out and cancels its tool call", async () => {
    const task = await createTask(instance, "alice", ws, {
      name: "slow",
      action: { tool: "probe__hang", arguments: {} },
      limits: { timeoutSeconds: 30 },
    });
    const before = { hanging: probe.hanging, cancelled: probe.cancelled };
    const run = await startRun(instance, "alice", ws, task.id);
    await eventually(() => expect(probe.hanging).toBe(before.hanging + 1));
    await time.advance(29_999);
    expect((await runsOf(instance, "alice", ws, task.id))[0]?.execution.status).toBe("running");
    await time.advance(1);
    const timedOut = await ended(instance, "alice", ws, run);
    expect(timedOut.execution).toMatchObject({ status: "timed_out", error: { code: "timed_out" } });
    expect(timedOut.assessment.status).toBe("not_assessed");
    // The server heard the cancellation: its handler's signal was aborted.
    await eventually(() => expect(probe.cancelled).toBe(before.cancelled + 1));
  });

  it("concurrency limits hold across triggers, and a run can be cancelled", async () => {
    const task = await createTask(instance, "alice", ws, {
      name: "one at a time",
      action: { tool: "probe__hang", arguments: {} },
      trigger: { everySeconds: 600 },
      limits: { maxConcurrentRuns: 1, timeoutSeconds: 3600 },
    });
    const hanging = probe.hanging;
    const manual = await startRun(instance, "alice", ws, task.id);
    await eventually(() => expect(probe.hanging).toBe(hanging + 1));
    const second = await instance.rest("alice", "POST", tasksPath(ws, `/${task.id}/runs`), {});
    expect(second.status).toBe(409);
    expect(await second.json()).toMatchObject({ error: { code: "concurrency_limit" } });
    await time.advance(600_000);
    // The schedule's decision ends by recording its instant on the task.
    await eventually(async () => {
      const now = (await (await instance.rest("alice", "GET", tasksPath(ws, `/${task.id}`))).json()) as Task;
      expect(now.lastScheduledAt).not.toBe(task.lastScheduledAt);
    });
    expect((await runsOf(instance, "alice", ws, task.id)).map((run) => run.id)).toEqual([manual.id]);
    const cancel = await instance.rest(
      "alice",
      "POST",
      tasksPath(ws, `/${task.id}/runs/${manual.id}/cancel`),
    );
    expect(cancel.status).toBe(200);
    expect(((await cancel.json()) as Run).execution.status).toBe("cancelled");
    const again = await instance.rest("alice", "POST", tasksPath(ws, `/${task.id}/runs/${manual.id}/cancel`));
    expect(again.status).toBe(400);
    await instance.rest("alice", "DELETE", tasksPath(ws, `/${task.id}`));
  });

  it("a run started while its task is deleted is refused or cancelled with it: nothing of it outlives the task", async () => {
    // The reviewer's race: a start arriving while DELETE cancelled the runs it had found got 201
    // and ran as the owner after the 204, its record (and result file) left behind.
    const task = await createTask(instance, "alice", ws, {
      name: "deleted while starting",
      action: { tool: "probe__hang", arguments: {} },
      limits: { maxConcurrentRuns: 5 },
    });
    const reached = probe.hanging;
    const open = probe.hanging - probe.cancelled;
    await startRun(instance, "alice", ws, task.id);
    await settle();
    const start = () => instance.rest("alice", "POST", tasksPath(ws, `/${task.id}/runs`), {});
    const [deleted, ...starts] = await Promise.all([
      instance.rest("alice", "DELETE", tasksPath(ws, `/${task.id}`)),
      start(),
      start(),
      start(),
    ]);
    expect(deleted.status).toBe(204);
    for (const started of starts) expect([201, 404]).toContain(started.status);
    expect((await start()).status).toBe(404);
    // Every call the task made is cancelled, and no record of its runs is left.
    await eventually(() => expect(probe.hanging - probe.cancelled).toBe(open));
    expect(probe.hanging - reached).toBeGreaterThan(0);
    const dir = join(instance.root, ws, "tasks", alice, "runs");
    const left: Run[] = [];
    for (const name of (await readdir(dir)).filter((n) => n.endsWith(".json"))) {
      const run = JSON.parse(await readFile(join(dir, name), "utf8")) as Run;
      if (run.taskId === task.id) left.push(run);
    }
    expect(left).toEqual([]);
  });

  it("a private task is invisible to another member: the same answer as a task that does not exist", async () => {
    const task = await createTask(instance, "alice", ws, { name: "mine", action: echo() });
    const run = await startRun(instance, "alice", ws, task.id);
    const nothing = "tsk_000000000000000000000000";
    for (const [method, suffix, body] of [
      ["GET", "", undefined],
      ["PATCH", "", { name: "theirs" }],
      ["DELETE", "", undefined],
      ["POST", "/runs", {}],
      ["GET", "/runs", undefined],
    ] as const) {
      const hidden = await instance.rest("bob", method, tasksPath(ws, `/${task.id}${suffix}`), body);
      const absent = await instance.rest("bob", method, tasksPath(ws, `/${nothing}${suffix}`), body);
      expect(hidden.status, `${method} ${suffix}`).toBe(404);
      expect(await hidden.text()).toBe(await absent.text());
    }
    const runHidden = await instance.rest("bob", "GET", tasksPath(ws, `/${task.id}/runs/${run.id}`));
    expect(runHidden.status).toBe(404);
    const listed = (await (await instance.rest("bob", "GET", tasksPath(ws))).json()) as { tasks: Task[] };
    expect(listed.tasks.map((t) => t.id)).not.toContain(task.id);
    const client = await instance.mcpClient("bob", ws);
    const viaMcp = await client.callTool({ name: "tasks__get", arguments: { id: task.id } });
    const absentViaMcp = await client.callTool({ name: "tasks__get", arguments: { id: nothing } });
    expect(viaMcp).toEqual(absentViaMcp);
    expect(viaMcp.isError).toBe(true);
    const runViaMcp = await client.callTool({ name: "tasks__get_run", arguments: { id: run.id } });
    expect(runViaMcp.isError).toBe(true);

    // Shared, bob sees and runs it (as its owner), and may not change it.
    await instance.rest("alice", "PATCH", tasksPath(ws, `/${task.id}`), { visibility: "shared" });
    expect((await instance.rest("bob", "GET", tasksPath(ws, `/${task.id}`))).status).toBe(200);
    const bobsRun = await startRun(instance, "bob", ws, task.id);
    expect(bobsRun).toMatchObject({ startedBy: bob, ownerId: alice });
    const change = await instance.rest("bob", "PATCH", tasksPath(ws, `/${task.id}`), { name: "theirs" });
    expect(change.status).toBe(403);
    await ended(instance, "bob", ws, bobsRun);
  });

  it.each(MCP_ERAS)("is the same over MCP (%s): create, run, poll the run by its id", async (era) => {
    const client = await instance.mcpClient("alice", ws, { era });
    const created = await client.callTool({
      name: "tasks__create",
      arguments: { name: "via mcp", action: echo({ via: "mcp" }) },
    });
    expect(created.isError).toBeFalsy();
    const task = (created.structuredContent as { task: Task }).task;
    expect(task.id).toMatch(/^tsk_[0-9a-f]{24}$/);
    const started = await client.callTool({
      name: "tasks__run",
      arguments: { id: task.id, idempotencyKey: "k1" },
    });
    const run = (started.structuredContent as { run: Run }).run;
    expect(run.id).toMatch(/^run_[0-9a-f]{24}$/);
    expect(started.structuredContent).toMatchObject({ replayed: false });
    // The same key again answers the first run, and says so, as REST's Idempotent-Replayed does.
    const again = await client.callTool({
      name: "tasks__run",
      arguments: { id: task.id, idempotencyKey: "k1" },
    });
    expect(again.structuredContent).toMatchObject({ replayed: true, run: { id: run.id } });
    expect(JSON.stringify(again.content)).toContain("nothing new was started");
    await eventually(async () => {
      const polled = await client.callTool({ name: "tasks__get_run", arguments: { id: run.id } });
      expect((polled.structuredContent as { run: Run }).run.execution.status).toBe("succeeded");
    });
    const bad = await client.callTool({
      name: "tasks__create",
      arguments: { name: "loop", action: { tool: "tasks__run", arguments: {} } },
    });
    expect(bad.isError).toBe(true);
    expect(await runsOf(instance, "alice", ws, task.id)).toHaveLength(1);
  });

  it("retries a run with its input, and announces runs on the event stream, a private task's to its owner alone", async () => {
    const task = await createTask(instance, "alice", ws, {
      name: "retried",
      action: echo(),
      inputSchema: { type: "object", properties: { reply: { type: "object" } } },
    });
    const alices = new SseReader(await instance.rest("alice", "GET", `/v1/workspaces/${ws}/events`));
    const bobs = new SseReader(await instance.rest("bob", "GET", `/v1/workspaces/${ws}/events`));
    await Promise.all([alices.next(), bobs.next()]);
    const first = await ended(
      instance,
      "alice",
      ws,
      await startRun(instance, "alice", ws, task.id, { input: { reply: { n: 1 } } }),
    );
    const retry = await startRun(instance, "alice", ws, task.id, { retryOf: first.id });
    expect(retry).toMatchObject({ trigger: "retry", retryOf: first.id, input: { reply: { n: 1 } } });
    expect((await ended(instance, "alice", ws, retry)).result?.structuredContent).toEqual({ n: 1 });
    const seen: SseFrame[] = [];
    for (let i = 0; i < 4; i++) seen.push((await alices.nextEvent()) ?? {});
    expect(seen.map((frame) => [frame.event, (frame.data as { run?: Run } | undefined)?.run?.id])).toEqual([
      ["task.run.started", first.id],
      ["task.run.finished", first.id],
      ["task.run.started", retry.id],
      ["task.run.finished", retry.id],
    ]);
    expect(seen[1]?.data).toMatchObject({
      workspaceId: ws,
      run: {
        taskId: task.id,
        taskName: "retried",
        taskOwnerId: alice,
        execution: "succeeded",
        assessment: "not_assessed",
      },
    });
    // Bob's stream got none of it: the next thing he sees is an event for everyone.
    await instance.rest("alice", "PATCH", tasksPath(ws, `/${task.id}`), { visibility: "shared" });
    const shared = await startRun(instance, "alice", ws, task.id);
    expect(await bobs.nextEvent()).toMatchObject({
      event: "task.run.started",
      data: { run: { id: shared.id } },
    });
    await ended(instance, "alice", ws, shared);
    await Promise.all([alices.close(), bobs.close()]);
    const elsewhere = await instance.rest("alice", "POST", tasksPath(ws, `/${task.id}/runs`), {
      retryOf: "run_000000000000000000000000",
    });
    expect(elsewhere.status).toBe(404);
  });

  it("a run's end is announced to whom its task shows when the run ends: made private mid-run, to its owner alone", async () => {
    // The reviewer's note: the end was announced from the task as the run began, so a shared task
    // made private while it ran told every member how its run ended, error text and all.
    const task = await createTask(instance, "alice", ws, {
      name: "shared, then private",
      action: { tool: "probe__hang", arguments: {} },
      visibility: "shared",
    });
    const alices = new SseReader(await instance.rest("alice", "GET", `/v1/workspaces/${ws}/events`));
    const bobs = new SseReader(await instance.rest("bob", "GET", `/v1/workspaces/${ws}/events`));
    await Promise.all([alices.next(), bobs.next()]);
    const hanging = probe.hanging;
    const run = await startRun(instance, "alice", ws, task.id);
    await eventually(() => expect(probe.hanging).toBe(hanging + 1));
    expect(await bobs.nextEvent()).toMatchObject({
      event: "task.run.started",
      data: { run: { id: run.id } },
    });
    const hidden = await instance.rest("alice", "PATCH", tasksPath(ws, `/${task.id}`), {
      visibility: "private",
    });
    expect(hidden.status).toBe(200);
    const cancel = await instance.rest("alice", "POST", tasksPath(ws, `/${task.id}/runs/${run.id}/cancel`));
    expect(cancel.status).toBe(200);
    const seen: SseFrame[] = [];
    for (let i = 0; i < 2; i++) seen.push((await alices.nextEvent()) ?? {});
    expect(seen.map((frame) => frame.event)).toEqual(["task.run.started", "task.run.finished"]);
    expect(seen[1]?.data).toMatchObject({ run: { id: run.id, execution: "cancelled" } });
    // Bob's next event is one for everyone, not the private task's end.
    const other = await createTask(instance, "alice", ws, {
      name: "still shared",
      action: echo(),
      visibility: "shared",
    });
    const next = await startRun(instance, "alice", ws, other.id);
    expect(await bobs.nextEvent()).toMatchObject({
      event: "task.run.started",
      data: { run: { id: next.id } },
    });
    await ended(instance, "alice", ws, next);
    await Promise.all([alices.close(), bobs.close()]);
  });

  it("refuses a bad definition whole, writing nothing", async () => {
    const before = (await (await instance.rest("alice", "GET", tasksPath(ws))).json()) as { tasks: Task[] };
    for (const body of [
      { action: echo() },
      { name: "x", action: { tool: "no-separator" } },
      { name: "x", action: echo(), trigger: { cron: "not cron", timezone: "UTC" } },
      { name: "x", action: echo(), trigger: { cron: "0 9 * * *", timezone: "Mars/Olympus" } },
      { name: "x", action: echo(), trigger: { everySeconds: 1 } },
      { name: "x", action: echo(), outputSchema: { type: "no-such-type" } },
      { name: "x", action: echo(), limits: { timeoutSeconds: 0 } },
      { name: "x", action: echo(), owner: bob },
      {
        name: "x",
        action: echo(),
        trigger: { everySeconds: 3600 },
        inputSchema: { type: "object", required: ["n"] },
      },
    ]) {
      const response = await instance.rest("alice", "POST", tasksPath(ws), body);
      expect(response.status, JSON.stringify(body)).toBe(400);
    }
    const after = (await (await instance.rest("alice", "GET", tasksPath(ws))).json()) as { tasks: Task[] };
    expect(after.tasks).toHaveLength(before.tasks.length);
  });
});

describe("owners and the wall", () => {
  let instance: TestAtrium | undefined;
  afterEach(async () => {
    await instance?.stop();
    instance = undefined;
  });

  it("a removed owner's scheduled task does not run: recorded failed, and the workspace is told", async () => {
    const started = await startAt(Date.UTC(2026, 0, 1));
    instance = started.instance;
    const { ws, time } = started;
    await addMember(instance.rest, "alice", ws, "bob", { principalId: bob });
    const task = await createTask(instance, "bob", ws, {
      name: "bob's report",
      action: echo(),
      trigger: { everySeconds: 3600 },
    });
    // While bob is a member, his private task is his alone, the admin's view included.
    expect((await instance.rest("alice", "GET", tasksPath(ws, `/${task.id}`))).status).toBe(404);
    const removed = await instance.rest("alice", "DELETE", `/v1/workspaces/${ws}/members/${bob}`);
    expect(removed.status).toBeLessThan(300);
    const calls = probe.calls.filter((call) => call.principalId === bob).length;
    await time.advance(HOUR_MS);
    // The run is bob's: recorded in his partition, which the test reads from disk.
    let run: Run | undefined;
    await eventually(async () => {
      const dir = join(instance?.root ?? "", ws, "tasks", bob, "runs");
      const [name] = (await readdir(dir)).filter((n) => n.endsWith(".json"));
      run = JSON.parse(await readFile(join(dir, name ?? ""), "utf8")) as Run;
      expect(run.execution.status).not.toBe("running");
    });
    // Refused exactly as bob's own call is now.
    const own = (await (await instance.rest("bob", "GET", tasksPath(ws))).json()) as { error: object };
    expect(run).toMatchObject({
      taskId: task.id,
      trigger: "schedule",
      execution: { status: "failed", error: { ...own.error, reason: "owner_not_member" } },
    });
    expect(own.error).toMatchObject({ code: "workspace_not_found" });
    expect(probe.calls.filter((call) => call.principalId === bob)).toHaveLength(calls);
    await eventually(async () =>
      expect(await inbox(instance as TestAtrium, "alice", ws)).toContainEqual(
        expect.objectContaining({
          source: "tasks",
          severity: "warning",
          data: { taskId: task.id, runId: run?.id, ownerId: bob },
        }),
      ),
    );
    // Told once: the later schedules of a task whose owner is gone are skipped quietly.
    // Each schedule's decision records its instant on the task (before any run it starts).
    for (const hour of ["02", "03"]) {
      // Lets the last fire's job end before the next is due: a job that is still going is skipped.
      await settle();
      await time.advance(HOUR_MS);
      await eventually(async () => {
        const file = join(instance?.root ?? "", ws, "tasks", bob, `${task.id}.json`);
        const stored = JSON.parse(await readFile(file, "utf8")) as Task;
        expect(stored.lastScheduledAt).toBe(`2026-01-01T${hour}:00:00.000Z`);
      });
    }
    const runs = await readdir(join(instance.root, ws, "tasks", bob, "runs"));
    expect(runs.filter((name) => name.endsWith(".json"))).toHaveLength(1);
    const told = (await inbox(instance, "alice", ws)).filter((entry) => entry.source === "tasks");
    expect(told).toHaveLength(1);
    // The admin the inbox told can act: bob's private task is now theirs to see and delete.
    const listed = (await (await instance.rest("alice", "GET", tasksPath(ws))).json()) as { tasks: Task[] };
    expect(listed.tasks.map((t) => t.id)).toContain(task.id);
    expect((await instance.rest("alice", "DELETE", tasksPath(ws, `/${task.id}`))).status).toBe(204);
    await settle();
    await time.advance(HOUR_MS);
    await settle();
    expect(await readdir(join(instance.root, ws, "tasks", bob))).not.toContain(`${task.id}.json`);
  });

  it("a deactivated owner's task does not run either, refused in the words their own request gets", async () => {
    const started = await startAt(Date.UTC(2026, 0, 1));
    instance = started.instance;
    const { ws } = started;
    await addMember(instance.rest, "alice", ws, "bob", { principalId: bob });
    const task = await createTask(instance, "bob", ws, {
      name: "shared",
      action: echo(),
      visibility: "shared",
    });
    expect((await instance.rest("orgadmin-olga", "POST", `/v1/users/${bob}/deactivate`)).status).toBe(200);
    const own = await instance.rest("bob", "GET", tasksPath(ws));
    const run = await ended(instance, "alice", ws, await startRun(instance, "alice", ws, task.id));
    expect(run.execution).toEqual({
      status: "failed",
      error: { ...((await own.json()) as { error: object }).error, reason: "owner_deactivated" },
    });
  });

  it("only its owner changes a shared task's inputSchema: an admin cannot choose what the owner's action receives", async () => {
    // The reviewer's scenario: bob shares a task reading a harmless file of his; alice, an admin,
    // added an inputSchema and ran it with input {id: <bob's private file>}, merged over the
    // action's arguments, so the run read bob's secret as bob.
    const started = await startAt(Date.UTC(2026, 0, 1));
    instance = started.instance;
    const { ws } = started;
    await addMember(instance.rest, "alice", ws, "bob", { principalId: bob });
    const upload = async (name: string, text: string) => {
      const response = await started.instance.rest(
        "bob",
        "POST",
        `/v1/workspaces/${ws}/files?name=${name}`,
        text,
        {
          "content-type": "text/plain",
        },
      );
      expect(response.status).toBe(201);
      return ((await response.json()) as { id: string }).id;
    };
    const harmless = await upload("public.txt", "nothing to see");
    const secret = await upload("secret.txt", "BOB-SECRET-42");
    const task = await createTask(instance, "bob", ws, {
      name: "read the public note",
      action: { tool: "files__read", arguments: { id: harmless } },
      visibility: "shared",
    });
    for (const body of [
      { inputSchema: { type: "object" } },
      { inputSchema: null },
      { name: "renamed", inputSchema: { type: "object" } },
    ]) {
      const refused = await instance.rest("alice", "PATCH", tasksPath(ws, `/${task.id}`), body);
      expect(refused.status, JSON.stringify(body)).toBe(403);
      expect(((await refused.json()) as { error: { message: string } }).error.message).toContain(
        "Only the task's owner changes its inputSchema",
      );
    }
    const viaMcp = await (await instance.mcpClient("alice", ws)).callTool({
      name: "tasks__update",
      arguments: { id: task.id, inputSchema: { type: "object" } },
    });
    expect(viaMcp.isError).toBe(true);
    const kept = (await (await instance.rest("alice", "GET", tasksPath(ws, `/${task.id}`))).json()) as Task;
    expect(kept.name).toBe("read the public note");
    expect(kept.inputSchema).toBeUndefined();
    // So alice's run takes no input, and cannot name bob's file.
    const run = await instance.rest("alice", "POST", tasksPath(ws, `/${task.id}/runs`), {
      input: { id: secret },
    });
    expect(run.status).toBe(400);
    // An admin still changes the other fields; the owner changes the inputSchema.
    expect(
      (await instance.rest("alice", "PATCH", tasksPath(ws, `/${task.id}`), { name: "renamed" })).status,
    ).toBe(200);
    const owners = await instance.rest("bob", "PATCH", tasksPath(ws, `/${task.id}`), {
      inputSchema: { type: "object" },
    });
    expect(owners.status).toBe(200);
  });

  it("an admin may only stop a departed owner's private task: sharing, rescheduling or changing it, and its runs, are refused", async () => {
    // The reviewer's scenario: bob's private task read his private file; once he was deactivated,
    // alice (an admin) shared it, carl read the file's text in its runs, and once bob was back
    // carl ran it as bob. An admin sees such a task only so that it can be stopped.
    const started = await startAt(Date.UTC(2026, 0, 1));
    instance = started.instance;
    const { ws } = started;
    await addMember(instance.rest, "alice", ws, "bob", { principalId: bob });
    await addMember(instance.rest, "alice", ws, "carl", { principalId: carl });
    const uploaded = await instance.rest(
      "bob",
      "POST",
      `/v1/workspaces/${ws}/files?name=secret.txt`,
      "BOB-SECRET-42",
      {
        "content-type": "text/plain",
      },
    );
    expect(uploaded.status).toBe(201);
    const secret = ((await uploaded.json()) as { id: string }).id;
    const task = await createTask(instance, "bob", ws, {
      name: "read my note",
      action: { tool: "files__read", arguments: { id: secret } },
    });
    const run = await ended(instance, "bob", ws, await startRun(instance, "bob", ws, task.id));
    expect(JSON.stringify(run.result)).toContain("BOB-SECRET-42");
    const deactivated = await instance.rest("orgadmin-olga", "POST", `/v1/users/${bob}/deactivate`);
    expect(deactivated.status).toBe(200);

    expect((await instance.rest("alice", "GET", tasksPath(ws, `/${task.id}`))).status).toBe(200);
    for (const body of [
      { visibility: "shared" },
      { trigger: { everySeconds: 3600 } },
      { name: "renamed" },
      { description: "mine now" },
      { limits: { timeoutSeconds: 10 } },
      { outputSchema: { type: "object" } },
      { action: { tool: "files__list", arguments: {} } },
      { inputSchema: { type: "object" } },
      { trigger: null, visibility: "shared" },
    ]) {
      const refused = await instance.rest("alice", "PATCH", tasksPath(ws, `/${task.id}`), body);
      expect(refused.status, JSON.stringify(body)).toBe(403);
      expect(((await refused.json()) as { error: { message: string } }).error.message).toContain(
        'A workspace admin may only stop it: delete it (which cancels its runs in flight), or remove its trigger with {"trigger": null}.',
      );
    }
    const client = await instance.mcpClient("alice", ws);
    const viaMcp = await client.callTool({
      name: "tasks__update",
      arguments: { id: task.id, visibility: "shared" },
    });
    expect(viaMcp.isError).toBe(true);
    // Its runs hold what it read as bob: not alice's to read, nor to start (it would act as bob).
    for (const [method, suffix] of [
      ["GET", "/runs"],
      ["GET", `/runs/${run.id}`],
      ["POST", "/runs"],
      ["POST", `/runs/${run.id}/cancel`],
    ] as const) {
      const refused = await instance.rest(
        "alice",
        method,
        tasksPath(ws, `/${task.id}${suffix}`),
        method === "POST" ? {} : undefined,
      );
      expect(refused.status, `${method} ${suffix}`).toBe(403);
      expect(await refused.text()).not.toContain("BOB-SECRET-42");
    }
    const runViaMcp = await client.callTool({ name: "tasks__get_run", arguments: { id: run.id } });
    expect(runViaMcp.isError).toBe(true);
    expect(JSON.stringify(runViaMcp)).not.toContain("BOB-SECRET-42");
    expect((await instance.rest("carl", "GET", tasksPath(ws, `/${task.id}/runs`))).status).toBe(404);

    // Back, bob finds his task as he left it, his alone again.
    expect((await instance.rest("orgadmin-olga", "POST", `/v1/users/${bob}/reactivate`)).status).toBe(200);
    expect((await instance.rest("carl", "POST", tasksPath(ws, `/${task.id}/runs`), {})).status).toBe(404);
    expect((await instance.rest("alice", "GET", tasksPath(ws, `/${task.id}`))).status).toBe(404);
    expect(await (await instance.rest("bob", "GET", tasksPath(ws, `/${task.id}`))).json()).toEqual({
      ...task,
      lastSequence: 1,
    });
    expect(await runsOf(instance, "bob", ws, task.id)).toHaveLength(1);
  });

  it("an admin stops a departed owner's private task by removing its trigger: it no longer fires once the owner is back", async () => {
    const started = await startAt(Date.UTC(2026, 0, 1));
    instance = started.instance;
    const { ws, time } = started;
    await addMember(instance.rest, "alice", ws, "bob", { principalId: bob });
    const task = await createTask(instance, "bob", ws, {
      name: "hourly",
      action: echo(),
      trigger: { everySeconds: 3600 },
    });
    expect((await instance.rest("orgadmin-olga", "POST", `/v1/users/${bob}/deactivate`)).status).toBe(200);
    // A schedule of alice's choosing would fire as bob once he is back.
    const moved = await instance.rest("alice", "PATCH", tasksPath(ws, `/${task.id}`), {
      trigger: { everySeconds: 7200 },
    });
    expect(moved.status).toBe(403);
    const stopped = await instance.rest("alice", "PATCH", tasksPath(ws, `/${task.id}`), { trigger: null });
    expect(stopped.status).toBe(200);
    expect(((await stopped.json()) as Task).trigger).toBeUndefined();
    expect((await instance.rest("orgadmin-olga", "POST", `/v1/users/${bob}/reactivate`)).status).toBe(200);
    const calls = probe.calls.filter((call) => call.principalId === bob).length;
    await time.advance(3 * HOUR_MS);
    await settle();
    expect(await runsOf(instance, "bob", ws, task.id)).toEqual([]);
    expect(probe.calls.filter((call) => call.principalId === bob)).toHaveLength(calls);
  });

  it("a task calling a tool its credential's scopes do not cover is refused as that credential's call would be", async () => {
    const started = await startAt(Date.UTC(2026, 0, 1));
    instance = started.instance;
    const { ws } = started;
    const task = await createTask(instance, "alice", ws, {
      name: "write",
      action: { tool: "probe__write", arguments: {} },
    });
    // Defined over MCP with a read-only token: the record keeps that credential's scopes. No
    // token can be read-only and define a task (defining one needs mcp:write), so the record is
    // written as such a definition would leave it, and read at the next boot.
    const file = join(instance.root, ws, "tasks", alice, `${task.id}.json`);
    await instance.close();
    await writeFile(file, JSON.stringify({ ...task, scopes: ["mcp:read"] }));
    instance = await instance.restart();
    const calls = probe.calls.length;
    const run = await ended(instance, "alice", ws, await startRun(instance, "alice", ws, task.id));
    expect(run.execution).toEqual({
      status: "failed",
      error: {
        code: "forbidden",
        message: "Calling probe__write needs the mcp:write scope, which this credential was not granted.",
      },
    });
    expect(probe.calls).toHaveLength(calls);
  });
});

describe("configuration and large results", () => {
  it("validates the tasks section of instance.json with the file, by field name", async () => {
    const failure = await startTestAtrium({
      apps: APPS,
      sections: { tasks: { maxConcurrentRuns: 0 } },
    }).catch((error: unknown) => error);
    expect(String(failure)).toContain("tasks.maxConcurrentRuns: must be >= 1");
    const crossed = await startTestAtrium({
      apps: APPS,
      sections: { tasks: { defaultTimeoutSeconds: 600, maxTimeoutSeconds: 60 } },
    }).catch((error: unknown) => error);
    expect(String(crossed)).toContain(
      "tasks.defaultTimeoutSeconds (600) is more than tasks.maxTimeoutSeconds (60)",
    );
    // A BootError: the CLI prints it as one line and exits 1, with no stack.
    expect((crossed as Error).name).toBe("BootError");
    const none = await startTestAtrium({
      apps: APPS,
      sections: { tasks: { maxTasksPerWorkspace: 0 } },
    }).catch((error: unknown) => error);
    expect(String(none)).toContain("tasks.maxTasksPerWorkspace: must be >= 1");
    const owner = await startTestAtrium({
      apps: APPS,
      sections: { tasks: { maxTasksPerWorkspace: 10, maxTasksPerOwner: 20 } },
    }).catch((error: unknown) => error);
    expect(String(owner)).toContain(
      "tasks.maxTasksPerOwner (20) is more than tasks.maxTasksPerWorkspace (10)",
    );
  });

  it("a workspace holds at most tasks.maxTasksPerWorkspace tasks, a person at most tasks.maxTasksPerOwner of them, creates at once included", async () => {
    const instance = await startTestAtrium({
      apps: APPS,
      sections: { tasks: { maxTasksPerWorkspace: 3, maxTasksPerOwner: 2 } },
    });
    try {
      const ws = await bootstrapWorkspace(instance, "alice");
      await addMember(instance.rest, "alice", ws, "bob", { principalId: bob });
      const define = (user: string, name: string) =>
        instance.rest(user, "POST", tasksPath(ws), { name, action: echo(), trigger: { everySeconds: 3600 } });
      // Five at once: two pass the owner's bound, three are refused, none written past it.
      const first = await Promise.all(["a", "b", "c", "d", "e"].map((name) => define("alice", name)));
      expect(first.map((response) => response.status).sort()).toEqual([201, 201, 409, 409, 409]);
      const refused = (await first.find((response) => response.status === 409)?.json()) as {
        error: { code: string; message: string };
      };
      expect(refused.error.code).toBe("too_many_tasks");
      expect(refused.error.message).toContain("tasks.maxTasksPerOwner is 2");
      expect((await define("bob", "bob's")).status).toBe(201);
      const full = await define("bob", "bob's second");
      expect(full.status).toBe(409);
      expect(((await full.json()) as { error: { message: string } }).error.message).toContain(
        "tasks.maxTasksPerWorkspace is 3",
      );
      const [mine] = (await (await instance.rest("alice", "GET", tasksPath(ws))).json()).tasks as Task[];
      expect((await instance.rest("alice", "DELETE", tasksPath(ws, `/${mine?.id}`))).status).toBe(204);
      expect((await define("bob", "bob's second")).status).toBe(201);
    } finally {
      await instance.stop();
    }
  });

  it("stores a result larger than tasks.inlineResultBytes as a file of the owner's, and references it", async () => {
    const time = new FakeTime(Date.UTC(2026, 0, 1));
    const instance = await startTestAtrium({
      apps: APPS,
      clock: time.clock,
      timers: time.timers,
      sections: { tasks: { inlineResultBytes: 1024 } },
    });
    try {
      const ws = await bootstrapWorkspace(instance, "alice");
      const big = { text: "x".repeat(4000) };
      const task = await createTask(instance, "alice", ws, { name: "big", action: echo(big) });
      const run = await ended(instance, "alice", ws, await startRun(instance, "alice", ws, task.id));
      expect(run.result).toBeUndefined();
      expect(run.resultFile).toEqual({ id: expect.stringMatching(/^fl_/), size: expect.any(Number) });
      const file = await instance.rest("alice", "GET", `/v1/files/${run.resultFile?.id}`);
      expect(file.headers.get("content-type")).toContain("application/json");
      expect(((await file.json()) as { structuredContent: unknown }).structuredContent).toEqual(big);
    } finally {
      await instance.stop();
    }
  });
});

describe("result files (ADR 0079)", () => {
  let instance: TestAtrium | undefined;
  afterEach(async () => {
    await instance?.stop();
    instance = undefined;
  });

  async function startSmall(sections: Record<string, unknown> = {}) {
    const time = new FakeTime(Date.UTC(2026, 0, 1));
    instance = await startTestAtrium({
      apps: APPS,
      clock: time.clock,
      timers: time.timers,
      sections: { tasks: { inlineResultBytes: 1024, ...sections } },
    });
    return { instance, ws: await bootstrapWorkspace(instance, "alice") };
  }

  async function fileIds(instance: TestAtrium, ws: string): Promise<string[]> {
    const response = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/files`);
    return ((await response.json()) as { files: { id: string }[] }).files.map((file) => file.id).sort();
  }

  const big = echo({ text: "x".repeat(4000) });

  it("a run pruned past runsKeptPerTask takes its idempotency key with it at once: the key starts a new run", async () => {
    const { instance, ws } = await startSmall({ runsKeptPerTask: 1 });
    const task = await createTask(instance, "alice", ws, {
      name: "keyed",
      action: echo(),
      inputSchema: { type: "object", properties: { n: { type: "integer" } } },
    });
    const path = tasksPath(ws, `/${task.id}/runs`);
    const start = (key: string) =>
      instance.rest("alice", "POST", path, { input: { n: 1 } }, { "idempotency-key": key });
    const first = (await (await start("k1")).json()) as Run;
    await ended(instance, "alice", ws, first);
    const replay = await start("k1");
    expect([replay.headers.get("idempotent-replayed"), ((await replay.json()) as Run).id]).toEqual([
      "true",
      first.id,
    ]);
    // A second run ends and the first is pruned: its key goes with it, though its window is open.
    await ended(instance, "alice", ws, (await (await start("k2")).json()) as Run);
    expect((await runsOf(instance, "alice", ws, task.id)).map((run) => run.id)).not.toContain(first.id);
    const after = await start("k1");
    expect(after.status).toBe(201);
    expect(after.headers.get("idempotent-replayed")).toBeNull();
    const fresh = (await after.json()) as Run;
    expect(fresh.id).not.toBe(first.id);
    await ended(instance, "alice", ws, fresh);
  });

  it("a run's result file is deleted with the run: pruned past runsKeptPerTask, and with its task", async () => {
    const { instance, ws } = await startSmall({ runsKeptPerTask: 2 });
    const task = await createTask(instance, "alice", ws, { name: "big", action: big });
    for (let n = 0; n < 5; n++)
      await ended(instance, "alice", ws, await startRun(instance, "alice", ws, task.id));
    // Pruned after the last run's end is recorded: a pruned run is unlisted before its file is
    // deleted (store.ts forgetRuns), so the two are awaited together, as the prune leaves them.
    await eventually(async () => {
      const kept = await runsOf(instance, "alice", ws, task.id);
      expect(kept).toHaveLength(2);
      expect(await fileIds(instance, ws)).toEqual(kept.map((run) => run.resultFile?.id).sort());
    });
    const removed = await instance.rest("alice", "DELETE", tasksPath(ws, `/${task.id}`));
    expect(removed.status).toBe(204);
    expect(await fileIds(instance, ws)).toEqual([]);
  });

  it("a run whose result file was deleted by hand answers a note saying so, never a dangling resultFile", async () => {
    const { instance, ws } = await startSmall();
    const task = await createTask(instance, "alice", ws, { name: "big", action: big });
    const run = await ended(instance, "alice", ws, await startRun(instance, "alice", ws, task.id));
    const fileId = run.resultFile?.id;
    expect((await instance.rest("alice", "DELETE", `/v1/files/${fileId}`)).status).toBe(204);
    const [listed] = await runsOf(instance, "alice", ws, task.id);
    const read = (await (
      await instance.rest("alice", "GET", tasksPath(ws, `/${task.id}/runs/${run.id}`))
    ).json()) as Run;
    for (const seen of [listed, read]) {
      expect(seen?.resultFile).toBeUndefined();
      expect(seen?.resultNote).toContain(`${fileId}, which is no longer there`);
    }
  });

  it("what a crash left is cleared at the next use: the runs of a half-deleted task, and a result written for a run left running", async () => {
    const started = await startSmall();
    const { ws } = started;
    let restarted = started.instance;
    const gone = await createTask(restarted, "alice", ws, { name: "deleted", action: big });
    const goneRun = await ended(restarted, "alice", ws, await startRun(restarted, "alice", ws, gone.id));
    const cut = await createTask(restarted, "alice", ws, { name: "cut short", action: big });
    const cutRun = await ended(restarted, "alice", ws, await startRun(restarted, "alice", ws, cut.id));
    expect(await fileIds(restarted, ws)).toHaveLength(2);
    await restarted.close();
    // A kill -9 mid-delete: the task's record is gone, its run's is not.
    await rm(join(restarted.root, ws, "tasks", alice, `${gone.id}.json`));
    // A kill -9 between the result's file and the run's end: the record the start wrote, still `running`.
    const { endedAt: _ended, resultFile: _file, ...begun } = cutRun;
    const cutPath = join(restarted.root, ws, "tasks", alice, "runs", `${cutRun.id}.json`);
    await writeFile(cutPath, JSON.stringify({ ...begun, execution: { status: "running" } }));
    restarted = await restarted.restart();
    instance = restarted;
    const [after] = await runsOf(restarted, "alice", ws, cut.id);
    expect(after).toMatchObject({ id: cutRun.id, execution: { status: "interrupted" } });
    // Cleared in the background, each orphan's result file before its record (run-removal.ts), so
    // the files and the records are awaited together, as the last piece of that work leaves them.
    await eventually(async () => {
      expect(await fileIds(restarted, ws)).toEqual([]);
      expect(await readdir(join(restarted.root, ws, "tasks", alice, "runs"))).toEqual([`${cutRun.id}.json`]);
    });
    expect(goneRun.resultFile).toBeDefined();
  });
});

describe("restarts", () => {
  it("a run in flight at shutdown is interrupted after restart, and its call was cancelled", async () => {
    let { instance, ws } = await startAt(Date.UTC(2026, 0, 1));
    try {
      const task = await createTask(instance, "alice", ws, {
        name: "long",
        action: { tool: "probe__hang", arguments: {} },
        limits: { timeoutSeconds: 3600 },
      });
      const before = { hanging: probe.hanging, cancelled: probe.cancelled };
      const run = await startRun(instance, "alice", ws, task.id);
      await eventually(() => expect(probe.hanging).toBe(before.hanging + 1));
      instance = await instance.restart();
      const [after] = await runsOf(instance, "alice", ws, task.id);
      expect(after).toMatchObject({ id: run.id, execution: { status: "interrupted" } });
      expect(after?.endedAt).toBeDefined();
      expect(probe.cancelled).toBe(before.cancelled + 1);
    } finally {
      await instance.stop();
    }
  });

  it("a run a crash left running is recorded interrupted at the next boot, never left running", async () => {
    let { instance, ws } = await startAt(Date.UTC(2026, 0, 1));
    try {
      const task = await createTask(instance, "alice", ws, { name: "quick", action: echo() });
      const run = await ended(instance, "alice", ws, await startRun(instance, "alice", ws, task.id));
      await instance.close();
      // What a kill -9 mid-run leaves: the record the start wrote, still `running`.
      const file = join(instance.root, ws, "tasks", alice, "runs", `${run.id}.json`);
      const { endedAt: _ended, result: _result, ...started } = run;
      await writeFile(file, JSON.stringify({ ...started, execution: { status: "running" } }));
      instance = await instance.restart();
      const [after] = await runsOf(instance, "alice", ws, task.id);
      expect(after?.execution).toMatchObject({ status: "interrupted", error: { code: "interrupted" } });
      await eventually(async () =>
        expect(await inbox(instance, "alice", ws)).toContainEqual(
          expect.objectContaining({ source: "tasks", data: { taskId: task.id, runId: run.id } }),
        ),
      );
    } finally {
      await instance.stop();
    }
  });
});

describe("loaded on first use (ADR 0056)", () => {
  let instance: TestAtrium | undefined;
  afterEach(async () => {
    await instance?.stop();
    instance = undefined;
  });

  it("after a restart, an idempotency key is still honoured and a finished run is read from disk", async () => {
    const started = await startAt(Date.UTC(2026, 0, 1));
    instance = started.instance;
    const { ws } = started;
    const task = await createTask(instance, "alice", ws, {
      name: "keyed",
      action: echo(),
      inputSchema: { type: "object", properties: { reply: { type: "object" } } },
    });
    const path = tasksPath(ws, `/${task.id}/runs`);
    const headers = { "idempotency-key": "k-restart" };
    const body = { input: { reply: { n: 1 } } };
    const first = await instance.rest("alice", "POST", path, body, headers);
    expect(first.status).toBe(201);
    const run = await ended(instance, "alice", ws, (await first.json()) as Run);
    instance = await instance.restart();
    // The first request after boot reads the finished run from disk.
    const read = await instance.rest("alice", "GET", tasksPath(ws, `/${task.id}/runs/${run.id}`));
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({
      id: run.id,
      execution: { status: "succeeded" },
      result: { structuredContent: { n: 1 } },
    });
    const again = await instance.rest("alice", "POST", path, body, headers);
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(((await again.json()) as Run).id).toBe(run.id);
    const other = await instance.rest("alice", "POST", path, { input: { reply: { n: 2 } } }, headers);
    expect(other.status).toBe(409);
    expect((await runsOf(instance, "alice", ws, task.id)).map((r) => r.id)).toEqual([run.id]);
  });

  it("a workspace untouched since boot still fires its cron; a trigger removed before the restart is not armed", async () => {
    const started = await startAt(Date.UTC(2026, 0, 1, 0, 30));
    instance = started.instance;
    const { ws, time } = started;
    const hourly = await createTask(instance, "alice", ws, {
      name: "hourly",
      action: echo(),
      trigger: { cron: "0 * * * *", timezone: "UTC" },
    });
    const stopped = await createTask(instance, "alice", ws, {
      name: "stopped",
      action: echo(),
      trigger: { cron: "0 * * * *", timezone: "UTC" },
    });
    const patch = await instance.rest("alice", "PATCH", tasksPath(ws, `/${stopped.id}`), { trigger: null });
    expect(patch.status).toBe(200);
    instance = await instance.restart();
    const before = probe.calls.length;
    // No request touches the workspace: the fire alone loads its tasks.
    await time.advance(HOUR_MS);
    await eventually(() => expect(probe.calls.length).toBe(before + 1));
    const [run] = await scheduled(instance, ws, hourly.id, 1);
    expect(run).toMatchObject({ trigger: "schedule", scheduledFor: "2026-01-01T01:00:00.000Z" });
    expect(await runsOf(instance, "alice", ws, stopped.id)).toEqual([]);
    expect(probe.calls.length).toBe(before + 1);
  });

  it("a triggered task copied in by hand is armed on its workspace's first use, and indexed for the next boot", async () => {
    const started = await startAt(Date.UTC(2026, 0, 1, 0, 30));
    instance = started.instance;
    const { ws, time } = started;
    const task = await createTask(instance, "alice", ws, { name: "copied", action: echo() });
    await instance.close();
    // An operator's copy: a trigger the schedule index was never told of.
    const file = join(instance.root, ws, "tasks", alice, `${task.id}.json`);
    const trigger = { cron: "0 * * * *", timezone: "UTC" };
    await writeFile(file, JSON.stringify({ ...task, trigger, lastScheduledAt: task.createdAt }));
    instance = await instance.restart();
    expect(
      (await (await instance.rest("alice", "GET", tasksPath(ws, `/${task.id}`))).json()) as Task,
    ).toMatchObject({ trigger });
    await time.advance(HOUR_MS);
    await scheduled(instance, ws, task.id, 1);
    const entries = await readdir(join(instance.root, "_instance", "tasks", "schedules"));
    expect(entries).toContain(`${ws}-${alice}-${task.id}.json`);
  });

  it("a workspace a crash left a run running in has it recorded interrupted at boot, before any request", async () => {
    const started = await startAt(Date.UTC(2026, 0, 1));
    instance = started.instance;
    const { ws } = started;
    const task = await createTask(instance, "alice", ws, { name: "quick", action: echo() });
    const run = await ended(instance, "alice", ws, await startRun(instance, "alice", ws, task.id));
    await instance.close();
    // What a kill -9 mid-run leaves: the record the start wrote, still `running`, and the
    // workspace's mark, which a graceful stop would have removed.
    const file = join(instance.root, ws, "tasks", alice, "runs", `${run.id}.json`);
    const { endedAt: _ended, result: _result, ...begun } = run;
    await writeFile(file, JSON.stringify({ ...begun, execution: { status: "running" } }));
    const marks = join(instance.root, "_instance", "tasks", "running");
    await writeFile(join(marks, `${ws}.json`), JSON.stringify({ workspaceId: ws }));
    instance = await instance.restart();
    const onDisk = JSON.parse(await readFile(file, "utf8")) as Run;
    expect(onDisk.execution).toMatchObject({ status: "interrupted", error: { code: "interrupted" } });
    expect(await readdir(marks)).toEqual([]);
  });
});
