import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PlatformApp } from "../../src/platform/app.ts";
import { AppTools } from "../../src/platform/app-tools.ts";
import { PLATFORM_APPS } from "../../src/platform/index.ts";
import { platformInput } from "../../src/platform/platform-tool.ts";
import type { Run, Task } from "../../src/platform/tasks/model.ts";
import { startTestAtrium, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { eventually } from "../helpers/eventually.ts";
import { addMember } from "../helpers/members.ts";

// ADR 0106 with ADR 0154 amended: a run whose call a deactivation cut, or that was cancelled
// before, keeps its task's slot while its tool still runs. A platform tool that ignores its signal
// (as Atrium's own may) runs on; once the owner is reactivated, a task limited to one run at a time
// must not call it a second time beside the first (review rv41).

const ADMIN = "orgadmin-alice";
/** Calls of the tool running now. */
let running = 0;
const releases: (() => void)[] = [];
let started: (() => void) | undefined;

const stubborn: PlatformApp = {
  name: "stubborn",
  start: () => {
    const tools = new AppTools("stubborn");
    tools.registerTool(
      "sync",
      {
        description: "Ignores its signal.",
        inputSchema: platformInput({}),
        annotations: { readOnlyHint: false },
      },
      async () => {
        running++;
        started?.();
        await new Promise<void>((resolve) => releases.push(resolve));
        running--;
        return { content: [{ type: "text", text: "synced" }] };
      },
    );
    return { tools };
  },
};

let instance: TestAtrium;
beforeAll(async () => {
  instance = await startTestAtrium({ apps: [...PLATFORM_APPS, stubborn] });
});
afterAll(async () => {
  for (const release of releases) release();
  await instance?.stop();
});

/** A workspace where `name` owns a task of stubborn__sync limited to one run at a time. */
async function syncTaskOf(name: string): Promise<{ ws: string; owner: string; runs: string }> {
  const created = await instance.rest(ADMIN, "POST", "/v1/workspaces", { name: `team-${name}` });
  const ws = ((await created.json()) as { id: string }).id;
  const owner = testPrincipal(name).id;
  await addMember(instance.rest, ADMIN, ws, name, { principalId: owner });
  const defined = await instance.rest(name, "POST", `/v1/workspaces/${ws}/tasks`, {
    name: "sync",
    action: { tool: "stubborn__sync", arguments: {} },
    limits: { maxConcurrentRuns: 1 },
  });
  expect(defined.status, await defined.clone().text()).toBe(201);
  const task = (await defined.json()) as Task;
  return { ws, owner, runs: `/v1/workspaces/${ws}/tasks/${task.id}/runs` };
}

/** Starts a run and answers its id once its tool is running. */
async function startRun(name: string, runs: string): Promise<string> {
  const running = new Promise<void>((resolve) => (started = resolve));
  const answer = await instance.rest(name, "POST", runs, {});
  expect(answer.status).toBe(201);
  await running;
  return ((await answer.json()) as Run).id;
}

async function deactivateAndReactivate(owner: string): Promise<void> {
  expect((await instance.rest(ADMIN, "POST", `/v1/users/${owner}/deactivate`)).status).toBe(200);
  expect((await instance.rest(ADMIN, "POST", `/v1/users/${owner}/reactivate`)).status).toBe(200);
}

describe("a task run whose tool ignores its signal, limited to one run at a time", () => {
  it("cut by its owner's deactivation, holds its slot after a reactivation while the tool runs", async () => {
    const { owner, runs } = await syncTaskOf("bob");
    const runId = await startRun("bob", runs);
    await deactivateAndReactivate(owner);
    await eventually(async () => {
      const read = await instance.rest("bob", "GET", `${runs}/${runId}`);
      expect(((await read.json()) as Run).execution).toMatchObject({
        status: "failed",
        error: { reason: "owner_deactivated" },
      });
    });
    expect(running).toBe(1);
    const next = await instance.rest("bob", "POST", runs, {});
    expect(next.status).toBe(409);
    expect(((await next.json()) as { error: { code: string } }).error.code).toBe("concurrency_limit");
    expect(running).toBe(1);
    releases.shift()?.();
    await eventually(async () => expect((await instance.rest("bob", "POST", runs, {})).status).toBe(201));
  });

  it("cancelled, holds its slot while the tool runs, through a deactivation and a reactivation", async () => {
    const { owner, runs } = await syncTaskOf("carol");
    const before = running;
    const runId = await startRun("carol", runs);
    expect((await instance.rest("carol", "POST", `${runs}/${runId}/cancel`, {})).status).toBeLessThan(300);
    expect((await instance.rest("carol", "POST", runs, {})).status).toBe(409);
    await deactivateAndReactivate(owner);
    expect(running).toBe(before + 1);
    expect((await instance.rest("carol", "POST", runs, {})).status).toBe(409);
  });
});
