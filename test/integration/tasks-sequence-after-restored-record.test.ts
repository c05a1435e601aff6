import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import type { Run, Task } from "../../src/platform/tasks/model.ts";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { eventually } from "../helpers/eventually.ts";

// Reviews 60 and 61. A task's `lastSequence` is kept in its own record (ADR 0171) and its runs in files of
// their own: a record restored from a backup takes the counter back while newer runs stay. New
// runs were numbered below the runs kept, and the prune (the newest runsKeptPerTask by sequence)
// deleted each, with its result, as it ended, or the next run's end did. A run's end never prunes that
// run, and one numbered below the runs kept is renumbered past them, the record's counter raised
// with it (ADR 0171, amended 2026-12-07).

let instance: TestAtrium | undefined;
afterEach(async () => {
  await instance?.stop();
  instance = undefined;
});

function running(): TestAtrium {
  if (!instance) throw new Error("no instance");
  return instance;
}

async function findFile(dir: string, name: string): Promise<string | undefined> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      const found = await findFile(path, name);
      if (found) return found;
    } else if (entry.name === name) return path;
  }
  return undefined;
}

it("a run started after its task's record was restored from a backup is kept with its result, and the next is numbered above every kept run", async () => {
  instance = await startTestAtrium({ sections: { tasks: { runsKeptPerTask: 2 } } });
  const ws = await bootstrapWorkspace(instance, "alice");
  const tasks = `/v1/workspaces/${ws}/tasks`;
  const created = await instance.rest("alice", "POST", tasks, {
    name: "t",
    action: { tool: "files__list", arguments: {} },
  });
  expect(created.status).toBe(201);
  const task = (await created.json()) as Task;
  const file = await findFile(instance.root, `${task.id}.json`);
  if (!file) throw new Error("task file not found");
  const backup = await readFile(file, "utf8"); // lastSequence 0

  const runPath = (id: string) => `${tasks}/${task.id}/runs/${id}`;
  const start = async (): Promise<Run> => {
    const started = await running().rest("alice", "POST", `${tasks}/${task.id}/runs`, {});
    expect(started.status, await started.clone().text()).toBe(201);
    return (await started.json()) as Run;
  };
  const ended = async (run: Run): Promise<Run> => {
    let body: Run | undefined;
    await eventually(async () => {
      const r = await running().rest("alice", "GET", runPath(run.id));
      body = (await r.json()) as Run;
      expect(r.status, JSON.stringify(body)).toBe(200);
      expect(body.execution.status).not.toBe("running");
    });
    return body as Run;
  };
  for (let i = 0; i < 3; i++) await ended(await start());

  // The operator restores the task's record from the backup taken at its creation.
  await writeFile(file, backup);
  instance = await instance.restart();

  // Its first start reads no run (ADR 0171): the restored counter is all it knows.
  const fresh = await start();
  expect(fresh.sequence).toBe(1);
  await ended(fresh);
  // Its end's prune read the runs kept (2 and 3): the run is renumbered past them, the record first.
  await eventually(async () => {
    const r = await running().rest("alice", "GET", `${tasks}/${task.id}`);
    expect(((await r.json()) as Task).lastSequence).toBe(4);
  });
  expect(JSON.parse(await readFile(file, "utf8")).lastSequence).toBe(4);

  const after = await running().rest("alice", "GET", runPath(fresh.id));
  expect(after.status, "the run that just ended is still there").toBe(200);
  const kept = (await after.json()) as Run;
  expect(kept.sequence, "renumbered the newest it is").toBe(4);
  expect(kept.execution.status).toBe("succeeded");
  expect(kept.result ?? kept.resultFile, "with its result").toBeDefined();

  const next = await start();
  expect(next.sequence).toBe(5);
  await ended(next);
  const listed = (await (await running().rest("alice", "GET", `${tasks}/${task.id}/runs`)).json()) as {
    runs: Run[];
  };
  // Limit 2: the two runs started last are kept, `fresh` among them, not run 3 started before the
  // restore (review 61: `fresh` still numbered 1 was taken as the oldest by next's prune).
  expect(listed.runs.map((r) => r.id)).toEqual([next.id, fresh.id]);
  const again = await running().rest("alice", "GET", runPath(fresh.id));
  expect(again.status, "fresh is kept, result and all, past the next run's end").toBe(200);
});
