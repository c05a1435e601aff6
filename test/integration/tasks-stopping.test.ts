import { afterEach, describe, expect, it } from "vitest";
import type { Task } from "../../src/platform/tasks/model.ts";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { HOLD_HEADER, heldSignIn } from "../helpers/held-sign-in.ts";

// A graceful stop stops the scheduler at once while requests drain (graceful-stop.ts). A task
// written by a request still draining then was stored, and its job's arming threw "Scheduler is
// stopped": the client got a 500 for a task that was there, and armed at the next boot.

const signIn = heldSignIn();
let instance: TestAtrium | undefined;

afterEach(async () => {
  signIn.release();
  await instance?.stop();
  instance = undefined;
});

/** Sends `send` held in sign-in, begins the graceful stop, then lets the request on. */
async function duringStop(send: (headers: Record<string, string>) => Promise<Response>): Promise<Response> {
  signIn.reset();
  const answer = send({ [HOLD_HEADER]: "1" });
  await signIn.reached();
  const closing = instance?.atrium.close();
  signIn.release();
  const response = await answer;
  await closing;
  return response;
}

describe("a trigger set while a graceful stop drains", () => {
  const hourly = {
    name: "hourly",
    action: { tool: "files__list", arguments: {} },
    trigger: { everySeconds: 3600 },
  };

  it("a create answers 201 with the task it stored, which a restart finds", async () => {
    instance = await startTestAtrium({ identityProvider: signIn.provider });
    const ws = await bootstrapWorkspace(instance, "alice");
    const created = await duringStop((headers) =>
      (instance as TestAtrium).rest("alice", "POST", `/v1/workspaces/${ws}/tasks`, hourly, headers),
    );
    expect(created.status, await created.clone().text()).toBe(201);
    const task = (await created.json()) as Task;
    instance = await instance.restart();
    const stored = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/tasks/${task.id}`);
    expect(await stored.json()).toEqual(task);
  });

  it("an update answers 200 with the trigger it stored", async () => {
    instance = await startTestAtrium({ identityProvider: signIn.provider });
    const ws = await bootstrapWorkspace(instance, "alice");
    const { trigger: _none, ...plain } = hourly;
    const created = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/tasks`, plain);
    const task = (await created.json()) as Task;
    const updated = await duringStop((headers) =>
      (instance as TestAtrium).rest(
        "alice",
        "PATCH",
        `/v1/workspaces/${ws}/tasks/${task.id}`,
        { trigger: hourly.trigger },
        headers,
      ),
    );
    expect(updated.status, await updated.clone().text()).toBe(200);
    expect(((await updated.json()) as Task).trigger).toEqual(hourly.trigger);
  });
});
