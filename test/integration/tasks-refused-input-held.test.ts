import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";

// A run input of 2 million items (4 MB, under http.maxBodyBytes, two containers: far under the
// JSON bounds of ADR 0080) refused by `items: {type: "string"}`. Checked to the end, it made
// 2,000,000 ajv errors and left them on the task's compiled validator after the 400: ≈ 250 MiB
// held per task until its schema next checked something (ADR 0157).

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const ITEMS = 2_000_000;
const TASKS = 2;
let instance: TestAtrium;
let ws: string;
const taskIds: string[] = [];

function heapMiB(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

beforeAll(async () => {
  instance = await startTestAtrium();
  ws = await bootstrapWorkspace(instance, "mallory");
  for (let i = 0; i < TASKS; i++) {
    const created = await instance.rest("mallory", "POST", `/v1/workspaces/${ws}/tasks`, {
      name: `list ${i}`,
      action: { tool: "files__list", arguments: {} },
      inputSchema: { type: "object", properties: { a: { type: "array", items: { type: "string" } } } },
    });
    expect(created.status, await created.clone().text()).toBe(201);
    taskIds.push(((await created.json()) as { id: string }).id);
  }
}, 60_000);

afterAll(async () => {
  await instance?.stop();
});

describe("a run input refused by its task's input schema", () => {
  it("is answered with its first failure, and leaves nothing of the check held", async () => {
    const body = `{"input":{"a":[${new Array(ITEMS).fill("0").join(",")}]}}`;
    const before = heapMiB();
    for (const id of taskIds) {
      const refused = await instance.rest("mallory", "POST", `/v1/workspaces/${ws}/tasks/${id}/runs`, body, {
        "content-type": "application/json",
      });
      expect(refused.status).toBe(400);
      const text = await refused.text();
      expect(text).toContain("/a/0 must be string");
      expect(text).not.toContain("/a/1 ");
    }
    // Each task's validator held ≈ 250 MiB before; the bound leaves room for the server's own.
    expect(heapMiB() - before).toBeLessThan(50);
  }, 120_000);
});
