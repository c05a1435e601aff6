import { beforeAll, describe, expect, it } from "vitest";
import type { Run, Task } from "../../src/platform/tasks/model.ts";
import type { TestAtrium } from "../helpers/atrium.ts";
import { eventually } from "../helpers/eventually.ts";
import { ADMIN, endAccess, heldCallsAtrium } from "../helpers/held-calls-atrium.ts";

// A task run calls its tool as the task's owner, outside the MCP muxes. A change that ends the
// owner's access — their removal, their deactivation, the workspace's archive — cancels the call in
// flight (its tool's signal aborts) as it cancels the owner's own MCP and REST calls, and the run
// ends `failed` with the refusal a run started after the change gets, `owner_not_member` or
// `owner_deactivated` (ADR 0154, amended). Before, the call ran on as a person who had lost the
// workspace, and its result was kept in the run, which every member of the workspace reads when the
// task is shared.

const { held, instance: started, team, newPerson } = heldCallsAtrium();
let instance: TestAtrium;
beforeAll(() => {
  instance = started();
});

/** A new workspace with a member who owns a shared task calling slow__wait, whose run is in flight. */
async function runInFlight(tag: string) {
  const owner = newPerson("bob");
  const ws = await team(owner);
  const defined = await instance.rest(owner, "POST", `/v1/workspaces/${ws}/tasks`, {
    name: "wait",
    visibility: "shared",
    action: { tool: "slow__wait", arguments: { tag } },
  });
  expect(defined.status, await defined.clone().text()).toBe(201);
  const task = (await defined.json()) as Task;
  const running = held.running(tag);
  const started = await instance.rest(owner, "POST", `/v1/workspaces/${ws}/tasks/${task.id}/runs`, {});
  expect(started.status, await started.clone().text()).toBe(201);
  await running;
  return { ws, owner, task, run: (await started.json()) as Run };
}

/** The run once it has ended, as the workspace's admin reads it (the task is shared). */
async function ended(ws: string, run: Run): Promise<Run> {
  let seen: Run | undefined;
  await eventually(async () => {
    const path = `/v1/workspaces/${ws}/tasks/${run.taskId}/runs/${run.id}`;
    const response = await instance.rest(ADMIN, "GET", path);
    seen = (await response.json()) as Run;
    expect(seen.execution.status).not.toBe("running");
  });
  return seen as Run;
}

describe("a task run's call in flight", () => {
  it.each([
    ["removal", "workspace_not_found", "owner_not_member"],
    ["deactivation", "forbidden", "owner_deactivated"],
  ] as const)(
    "is cancelled by its owner's %s, and the run fails with the refusal",
    async (change, code, reason) => {
      const tag = `task-${change}`;
      const { ws, owner, run } = await runInFlight(tag);
      await endAccess(instance, change, ws, owner);
      expect(held.cancelled).toContain(tag);
      const end = await ended(ws, run);
      expect(end.execution).toMatchObject({ status: "failed", error: { code, reason } });
      expect(end.result).toBeUndefined();
    },
  );

  it("is cancelled by the workspace's archive", async () => {
    const tag = "task-archive";
    const { ws } = await runInFlight(tag);
    await endAccess(instance, "archive", ws, ADMIN);
    expect(held.cancelled).toContain(tag);
  });
});
