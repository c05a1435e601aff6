import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { Task } from "../../src/platform/tasks/model.ts";
import { type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { type CallEntry, callThrough } from "../helpers/call-through.ts";
import { listTree } from "../helpers/fs-tree.ts";
import { ACCESS_ENDINGS, endAccess, heldCallsAtrium } from "../helpers/held-calls-atrium.ts";
import { holdingFsCall } from "../helpers/held-fs-call.ts";

// A task's create, update or delete, or a run's start, whose caller's access ends while it runs
// (an archive, a removal, a deactivation) changes nothing, through the tasks tools and their REST
// twins (ADR 0154, amended): the task store asks the caller's access under the record's lock just
// before the one step that makes the write seen (a create's link, an update's rename, a delete's
// unlink, the run record's link), and a refusal leaves no record and no schedule entry. The write
// is held at a disk step before it: the temp file of the record, or, for a delete, the first read
// of the workspace's runs. A task never calls a tasks tool, so no task run is an entry here.

const { instance: started, tools, team, newPerson } = heldCallsAtrium();
let instance: TestAtrium;
beforeAll(() => {
  instance = started();
});

const HOURLY = { everySeconds: 3600 };
const action = { tool: "files__list", arguments: {} };

/**
 * `principalId`'s task and run records under the data root, the archive included, each with its
 * bytes, their writers' temp files, and the schedule index's entries of their tasks.
 */
async function tasksOf(principalId: string): Promise<Record<string, string>> {
  const record = new RegExp(`tasks/${principalId}/(runs/)?[^/]+$`);
  const entry = new RegExp(`tasks/schedules/ws_[0-9a-f]+-${principalId}-`);
  const paths = (await listTree(instance.root)).filter((path) => record.test(path) || entry.test(path));
  const found: Record<string, string> = {};
  for (const path of paths)
    found[path.replace(/.*\/tasks\//, "")] = await readFile(join(instance.root, path), "utf8");
  return found;
}

/**
 * `tasksOf`, each task's `lastSequence` left out: a start refused at its run's commit has taken
 * its sequence already, a gap as any failed start leaves (ADR 0171); no run of it is left.
 */
async function tasksBesideSequence(principalId: string): Promise<Record<string, string>> {
  const found = await tasksOf(principalId);
  for (const [path, text] of Object.entries(found)) {
    if (!/\/tsk_[0-9a-f]+\.json$/.test(path)) continue;
    const { lastSequence: _taken, ...task } = JSON.parse(text) as Task;
    found[path] = JSON.stringify(task);
  }
  return found;
}

/** A task of `member`'s in `ws` with `fields`, made before anything is held. */
async function taskOf(member: string, ws: string, fields: Record<string, unknown> = {}): Promise<Task> {
  const created = await instance.rest(member, "POST", `/v1/workspaces/${ws}/tasks`, {
    name: "kept",
    action,
    ...fields,
  });
  expect(created.status, await created.clone().text()).toBe(201);
  return (await created.json()) as Task;
}

/** The temp file a record of `principalId`'s is written to before its link or rename: `name` the record's. */
const tempOf = (principalId: string, name: string) => (path: string) =>
  new RegExp(`/tasks/${principalId}/(runs/)?\\.tmp-${name}\\.json-`).test(path);

type Entry = CallEntry | "rest";
const ENTRIES: readonly Entry[] = ["mcp 2025-11-25", "mcp 2026-07-28", "rest tools/call", "rest"];

describe.each(ENTRIES)("through %s", (entry) => {
  /** `tool` as `member` in `ws` through this entry, or `rest` through the tool's REST twin. */
  const call = async (
    member: string,
    ws: string,
    tool: string,
    args: Record<string, unknown>,
    rest: () => Promise<Response>,
  ): Promise<{ answer: Promise<unknown> }> =>
    entry === "rest"
      ? { answer: rest().catch(() => undefined) }
      : callThrough(instance, entry, member, ws, tool, args);

  it.each(ACCESS_ENDINGS)(
    "a task created while its caller's access ends by %s is not there",
    async (change) => {
      const member = newPerson("tess");
      const principalId = testPrincipal(member).id;
      const ws = await team(member);
      await holdingFsCall("open", tempOf(principalId, "tsk_[0-9a-f]+"), async (create) => {
        const body = { name: "late", action, trigger: HOURLY };
        const { answer } = await call(member, ws, "tasks__create", body, () =>
          instance.rest(member, "POST", `/v1/workspaces/${ws}/tasks`, body),
        );
        await create.reached;
        await endAccess(instance, change, ws, member);
        create.release();
        await answer;
        await tools().settled();
      });
      expect(await tasksOf(principalId)).toEqual({});
    },
  );

  it.each(ACCESS_ENDINGS)(
    "a task updated while its caller's access ends by %s is unchanged",
    async (change) => {
      const member = newPerson("tess");
      const principalId = testPrincipal(member).id;
      const ws = await team(member);
      const task = await taskOf(member, ws);
      const before = await tasksOf(principalId);
      await holdingFsCall("open", tempOf(principalId, task.id), async (update) => {
        const body = { name: "late", trigger: HOURLY };
        const { answer } = await call(member, ws, "tasks__update", { id: task.id, ...body }, () =>
          instance.rest(member, "PATCH", `/v1/workspaces/${ws}/tasks/${task.id}`, body),
        );
        await update.reached;
        await endAccess(instance, change, ws, member);
        update.release();
        await answer;
        await tools().settled();
      });
      expect(await tasksOf(principalId)).toEqual(before);
    },
  );

  it.each(ACCESS_ENDINGS)(
    "a task deleted while its caller's access ends by %s is still there",
    async (change) => {
      const member = newPerson("tess");
      const principalId = testPrincipal(member).id;
      const ws = await team(member);
      const task = await taskOf(member, ws, { trigger: HOURLY });
      const before = await tasksOf(principalId);
      // The delete's first read of the workspace's runs, which no call has needed yet.
      await holdingFsCall(
        "readdir",
        (path) => path.endsWith(`/${ws}/tasks`),
        async (removal) => {
          const { answer } = await call(member, ws, "tasks__delete", { id: task.id }, () =>
            instance.rest(member, "DELETE", `/v1/workspaces/${ws}/tasks/${task.id}`),
          );
          await removal.reached;
          await endAccess(instance, change, ws, member);
          removal.release();
          await answer;
          await tools().settled();
        },
      );
      expect(await tasksOf(principalId)).toEqual(before);
    },
  );

  it.each(ACCESS_ENDINGS)(
    "a run started while its caller's access ends by %s is not there",
    async (change) => {
      const member = newPerson("tess");
      const principalId = testPrincipal(member).id;
      const ws = await team(member);
      const task = await taskOf(member, ws);
      const before = await tasksBesideSequence(principalId);
      await holdingFsCall("open", tempOf(principalId, "run_[0-9a-f]+"), async (start) => {
        const { answer } = await call(member, ws, "tasks__run", { id: task.id, idempotencyKey: "once" }, () =>
          instance.rest(
            member,
            "POST",
            `/v1/workspaces/${ws}/tasks/${task.id}/runs`,
            {},
            { "idempotency-key": "once" },
          ),
        );
        await start.reached;
        await endAccess(instance, change, ws, member);
        start.release();
        await answer;
        await tools().settled();
      });
      expect(await tasksBesideSequence(principalId)).toEqual(before);
    },
  );
});
