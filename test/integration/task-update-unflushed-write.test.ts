import { dirname } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { journalDuring } from "../helpers/fs-journal.ts";

// A task's update replaces its JSON (writeFileAtomic: temp file, rename over it, then a flush of
// its folder). When the flush failed after the rename, the store kept the old task in memory and
// answered 500, while the disk held the new one, served after a restart (review51). An overwrite
// that lands is held as landed: the old bytes are gone, so it cannot be undone as a create is
// (ADR 0166).

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

/** Alice renames the task while every flush `failing` picks (given the task's folder) fails. */
async function renameFailing(
  ws: string,
  taskId: string,
  failing: (path: string, taskDir: string) => boolean,
) {
  let taskDir: string | undefined;
  let status: number | undefined;
  await journalDuring(
    async () => {
      status = (await t.rest("alice", "PATCH", `/v1/workspaces/${ws}/tasks/${taskId}`, { name: "renamed" }))
        .status;
    },
    {
      sync: (path) => {
        if (path.includes(taskId)) taskDir = dirname(path);
        return taskDir !== undefined && failing(path, taskDir) ? eio() : undefined;
      },
    },
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
    expect(await renameFailing(ws, taskId, (path, taskDir) => path === taskDir)).toBe(200);
    expect(await nameShown(ws, taskId)).toBe("renamed");
    t = await t.restart();
    expect(await nameShown(ws, taskId)).toBe("renamed");
  }, 60_000);
});

describe("a task update whose new file's own flush fails", () => {
  it("is 500, and the old definition is served before and after a restart", async () => {
    const ws = await bootstrapWorkspace(t, "alice");
    const taskId = await newTask(ws);
    expect(await renameFailing(ws, taskId, (path, taskDir) => path.startsWith(`${taskDir}/.tmp-`))).toBe(500);
    expect(await nameShown(ws, taskId)).toBe("nightly");
    t = await t.restart();
    expect(await nameShown(ws, taskId)).toBe("nightly");
  }, 60_000);
});
