// A run start's "retryOf" that is not a run id went straight to the run lookup and was answered
// 404 run_not_found, "No run with that id": the caller was told a run is missing, not that the
// field was wrong.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";

let instance: TestAtrium;
let ws: string;
let taskId: string;

beforeAll(async () => {
  instance = await startTestAtrium();
  ws = await bootstrapWorkspace(instance, "alice");
  const created = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/tasks`, {
    name: "retried",
    action: { tool: "files__list", arguments: {} },
  });
  taskId = ((await created.json()) as { id: string }).id;
});

afterAll(async () => {
  await instance?.stop();
});

const SAID = '"retryOf" is a run id, run_ followed by 24 hex digits.';

describe("a run start whose retryOf is not a run id", () => {
  it.each([
    ["a number", 1],
    ["an object", {}],
    ["a list", ["run_x"]],
    ["null", null],
    ["a string that is not a run id", "run_x"],
  ])("is 400 invalid_input naming retryOf, over REST (%s)", async (_case, retryOf) => {
    const response = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/tasks/${taskId}/runs`, {
      retryOf,
    });
    const body = (await response.json()) as { error: { code: string; message: string } };
    expect(response.status).toBe(400);
    expect(body.error).toEqual({ code: "invalid_input", message: SAID });
  });

  it("is a tool error naming retryOf, over MCP", async () => {
    const client = await instance.mcpClient("alice", ws);
    const result = await client.callTool({ name: "tasks__run", arguments: { id: taskId, retryOf: "run_x" } });
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toContain("retryOf");
  });

  it("starts nothing", async () => {
    const response = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/tasks/${taskId}/runs`);
    expect(((await response.json()) as { runs: unknown[] }).runs).toEqual([]);
  });
});
