import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { journalDuring } from "../helpers/fs-journal.ts";

// A task's update replaces its JSON (writeFileAtomic: temp file, rename over it, then a flush of
// its folder). When the flush failed after the rename, the store kept the old task in memory and
// answered 500, while the disk held the new one, served after a restart (review51); a delete's
// unlink alike left the task listed, and armed, with no file behind it. A change that lands is
// held as landed: the old bytes are gone, so it cannot be undone as a create is (ADR 0166).

let t: TestAtrium;
beforeAll(async () => {
  t = await startTestAtrium();
});
afterAll(async () => {
  await t?.stop();
});

const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });

async function newTask(ws: string): Promise<string> {
  const created = await t.rest("alice", "POST", `/v1/workspaces/${ws}/tasks`, {
    name: "nightly",
    action: { tool: "files__list", arguments: {} },
  });
  expect(created.status).toBe(201);
  return ((await created.json()) as { id: string }).id;
}

/**
 * Alice changes the task (a rename, or `DELETE`) while every flush `failing` picks fails, given
 * the folder that holds the task's record (`<ws>/tasks/<owner>/`).
 */
async function changeFailing(
  ws: string,
  taskId: string,
  failing: (path: string, taskDir: string) => boolean,
  method: "PATCH" | "DELETE" = "PATCH",
) {
  const [owner] = await readdir(join(t.root, ws, "tasks"));
  const taskDir = join(t.root, ws, "tasks", owner as string);
  expect(await readdir(taskDir)).toContain(`${taskId}.json`);
  let status: number | undefined;
  await journalDuring(
    async () => {
      const body = method === "PATCH" ? { name: "renamed" } : undefined;
      status = (await t.rest("alice", method, `/v1/workspaces/${ws}/tasks/${taskId}`, body)).status;
    },
    { sync: (path) => (failing(path, taskDir) ? eio() : undefined) },
  );
  return status;
}

const nameShown = async (ws: string, taskId: string) =>
  ((await (await t.rest("alice", "GET", `/v1/workspaces/${ws}/tasks/${taskId}`)).json()) as { name: string })
    .name;

describe("a task update whose record lands but whose folder's flush fails", () => {
  it("is 200, and the new definition is served before and after a restart", async () => {
    const ws = await bootstrapWorkspace(t, "alice");
    const taskId = await newTask(ws);
    expect(await changeFailing(ws, taskId, (path, taskDir) => path === taskDir)).toBe(200);
    expect(await nameShown(ws, taskId)).toBe("renamed");
    t = await t.restart();
    expect(await nameShown(ws, taskId)).toBe("renamed");
  }, 60_000);
});

describe("a task update whose new file's own flush fails", () => {
  it("is 500, and the old definition is served before and after a restart", async () => {
    const ws = await bootstrapWorkspace(t, "alice");
    const taskId = await newTask(ws);
    expect(await changeFailing(ws, taskId, (path, taskDir) => path.startsWith(`${taskDir}/.tmp-`))).toBe(500);
    expect(await nameShown(ws, taskId)).toBe("nightly");
    t = await t.restart();
    expect(await nameShown(ws, taskId)).toBe("nightly");
  }, 60_000);
});

describe("a task delete whose unlink lands but whose folder's flush fails", () => {
  it("is 204, and the task is gone before and after a restart", async () => {
    const ws = await bootstrapWorkspace(t, "alice");
    const taskId = await newTask(ws);
    expect(await changeFailing(ws, taskId, (path, taskDir) => path === taskDir, "DELETE")).toBe(204);
    const read = () => t.rest("alice", "GET", `/v1/workspaces/${ws}/tasks/${taskId}`);
    expect((await read()).status).toBe(404);
    t = await t.restart();
    expect((await read()).status).toBe(404);
  }, 60_000);
});
