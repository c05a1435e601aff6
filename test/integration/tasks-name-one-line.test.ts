// A task's name is "1 to 100 characters on one line", checked by isUnshowable (text.ts), which
// looked only at C0 and DEL: U+0085 NEXT LINE, the C1 CSI (U+009B, a terminal escape) and the
// line and paragraph separators U+2028 and U+2029 were stored as sent, over REST and MCP alike.
// A name stored before they were refused still loads: boot and the workspace's load never judge it.
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Task } from "../../src/platform/tasks/model.ts";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";

let instance: TestAtrium;
let ws: string;

beforeAll(async () => {
  instance = await startTestAtrium();
  ws = await bootstrapWorkspace(instance, "alice");
});

afterAll(async () => {
  await instance?.stop();
});

const NOT_ONE_LINE = [
  ["U+0085 NEXT LINE", "first\u0085second"],
  ["U+009B CSI", "first\u009b2Jsecond"],
  ["U+0080, the first C1 control", "first\u0080second"],
  ["U+2028 LINE SEPARATOR", "first\u2028second"],
  ["U+2029 PARAGRAPH SEPARATOR", "first\u2029second"],
] as const;

const SAID = 'A task\'s "name" is 1 to 100 characters on one line';

async function create(name: string): Promise<Response> {
  return instance.rest("alice", "POST", `/v1/workspaces/${ws}/tasks`, {
    name,
    action: { tool: "files__list", arguments: {} },
    trigger: { cron: "0 0 1 1 *", timezone: "UTC" },
  });
}

describe("a task name that is not one line of text is refused", () => {
  it.each(NOT_ONE_LINE)("on create over REST: %s", async (_case, name) => {
    const response = await create(name);
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { message: string } }).error.message).toContain(SAID);
  });

  it.each(NOT_ONE_LINE)("on a rename over REST: %s", async (_case, name) => {
    const task = (await (await create("plain")).json()) as Task;
    const response = await instance.rest("alice", "PATCH", `/v1/workspaces/${ws}/tasks/${task.id}`, { name });
    expect(response.status).toBe(400);
    const kept = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/tasks/${task.id}`);
    expect(((await kept.json()) as Task).name).toBe("plain");
  });

  it("on create over MCP", async () => {
    const client = await instance.mcpClient("alice", ws);
    const result = await client.callTool({
      name: "tasks__create",
      arguments: { name: "first\u2028second", action: { tool: "files__list", arguments: {} } },
    });
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toContain("on one line");
  });

  it("while a name with other scripts, emoji and a no-break space is kept as sent", async () => {
    const response = await create("Rapport\u00a0mensuel — 月報 \u{1F4C8}");
    expect(response.status).toBe(201);
    expect(((await response.json()) as Task).name).toBe("Rapport\u00a0mensuel — 月報 \u{1F4C8}");
  });
});

describe("a task stored with such a name before they were refused", () => {
  it("still boots with its trigger, is listed, and can be changed in its other fields", async () => {
    const task = (await (await create("to be renamed on disk")).json()) as Task;
    await instance.close();
    const path = join(instance.root, ws, "tasks", testPrincipal("alice").id, `${task.id}.json`);
    const stored = JSON.parse(await readFile(path, "utf8")) as Task;
    await writeFile(path, JSON.stringify({ ...stored, name: "old\u0085name\u2028here" }));
    instance = await instance.restart();

    const listed = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/tasks`);
    expect(listed.status).toBe(200);
    const tasks = ((await listed.json()) as { tasks: Task[] }).tasks;
    expect(tasks.find((t) => t.id === task.id)?.name).toBe("old\u0085name\u2028here");
    const changed = await instance.rest("alice", "PATCH", `/v1/workspaces/${ws}/tasks/${task.id}`, {
      description: "still works",
    });
    expect(changed.status).toBe(200);
    expect((await changed.json()) as Task).toMatchObject({
      name: "old\u0085name\u2028here",
      description: "still works",
    });
  });
});
