import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { PLATFORM_APPS } from "../../src/platform/index.ts";
import type { Run, Task } from "../../src/platform/tasks/model.ts";
import { SyncedFileWriter } from "../../src/storage/synced-file-writer.ts";
import { startTestAtrium, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { eventually } from "../helpers/eventually.ts";
import { addMember } from "../helpers/members.ts";

// A files__write that a deactivation cancels (ADR 0154, amended) stores nothing: the task run is
// recorded failed owner_deactivated with no result and the REST caller is answered 403, and the
// file must not land after either was told. The tool goes on after its call was failed (it is
// held here where it opens its content file, as a slow disk would hold it), and its store checks
// the call's signal before the rename that puts the file in place (review rv41).

const ADMIN = "orgadmin-alice";
let instance: TestAtrium;
beforeAll(async () => {
  instance = await startTestAtrium({ apps: PLATFORM_APPS });
});
afterEach(() => {
  vi.restoreAllMocks();
});
afterAll(async () => {
  await instance?.stop();
});

/** Holds the next file write where it opens its content file, until `release`. */
function holdTheWrite(): { reached: Promise<void>; release: () => void } {
  const original = SyncedFileWriter.create.bind(SyncedFileWriter);
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let reach!: () => void;
  const reached = new Promise<void>((resolve) => (reach = resolve));
  vi.spyOn(SyncedFileWriter, "create").mockImplementation(async (path: string) => {
    reach();
    await held;
    return original(path);
  });
  return { reached, release };
}

/** The staging folders of writes under way in the person's files directory. */
async function stagedWrites(ws: string, principalId: string): Promise<string[]> {
  const names = await readdir(join(instance.root, ws, "files", principalId)).catch(() => []);
  return names.filter((name) => name.startsWith(".tmp-"));
}

/** Once the held write has ended: stored, or its staging folder removed. */
async function noWriteUnderWay(ws: string, principalId: string): Promise<void> {
  await eventually(async () => expect(await stagedWrites(ws, principalId)).toEqual([]));
}

async function fileNames(name: string, ws: string): Promise<string[]> {
  const listed = await instance.rest(name, "GET", `/v1/workspaces/${ws}/files`);
  return ((await listed.json()) as { files: { name: string }[] }).files.map((file) => file.name);
}

async function workspaceWith(name: string): Promise<{ ws: string; principalId: string }> {
  const created = await instance.rest(ADMIN, "POST", "/v1/workspaces", { name: `team-${name}` });
  const ws = ((await created.json()) as { id: string }).id;
  const principalId = testPrincipal(name).id;
  await addMember(instance.rest, ADMIN, ws, name, { principalId });
  return { ws, principalId };
}

describe("a files__write cancelled by its caller's deactivation", () => {
  it("a task run's, recorded failed owner_deactivated, stores no file", async () => {
    const { ws, principalId } = await workspaceWith("bob");
    const defined = await instance.rest("bob", "POST", `/v1/workspaces/${ws}/tasks`, {
      name: "report",
      visibility: "shared",
      action: { tool: "files__write", arguments: { name: "late.txt", text: "written after the run failed" } },
    });
    expect(defined.status, await defined.clone().text()).toBe(201);
    const runs = `/v1/workspaces/${ws}/tasks/${((await defined.json()) as Task).id}/runs`;
    const write = holdTheWrite();
    const started = await instance.rest("bob", "POST", runs, {});
    expect(started.status).toBe(201);
    const runId = ((await started.json()) as Run).id;
    await write.reached;
    expect(await stagedWrites(ws, principalId)).toHaveLength(1);
    expect((await instance.rest(ADMIN, "POST", `/v1/users/${principalId}/deactivate`)).status).toBe(200);
    await eventually(async () => {
      const read = await instance.rest(ADMIN, "GET", `${runs}/${runId}`);
      expect(((await read.json()) as Run).execution).toMatchObject({
        status: "failed",
        error: { reason: "owner_deactivated" },
      });
    });
    write.release();
    await noWriteUnderWay(ws, principalId);
    expect((await instance.rest(ADMIN, "POST", `/v1/users/${principalId}/reactivate`)).status).toBe(200);
    expect(await fileNames("bob", ws)).not.toContain("late.txt");
  });

  it("a REST call's, answered 403, stores no file", async () => {
    const { ws, principalId } = await workspaceWith("carol");
    const write = holdTheWrite();
    const answer = instance.rest("carol", "POST", `/v1/workspaces/${ws}/tools/call`, {
      name: "files__write",
      arguments: { name: "rest-late.txt", text: "x" },
    });
    await write.reached;
    expect(await stagedWrites(ws, principalId)).toHaveLength(1);
    expect((await instance.rest(ADMIN, "POST", `/v1/users/${principalId}/deactivate`)).status).toBe(200);
    expect((await answer).status).toBe(403);
    write.release();
    await noWriteUnderWay(ws, principalId);
    expect((await instance.rest(ADMIN, "POST", `/v1/users/${principalId}/reactivate`)).status).toBe(200);
    expect(await fileNames("carol", ws)).not.toContain("rest-late.txt");
  });
});
