import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { journalDuring } from "../helpers/fs-journal.ts";

// A rename writes workspace.json, renaming the new file into place, then flushes the workspace's
// folder. When that flush failed, the index already held the new name (the store takes what the
// disk holds), every reader saw it, and the route still answered 500 (ADR 0148, amended).

let t: TestAtrium;

beforeAll(async () => {
  t = await startTestAtrium();
});

afterAll(async () => {
  await t?.stop();
});

const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });

async function newWorkspace(): Promise<string> {
  const created = await t.rest("alice", "POST", "/v1/workspaces", { name: "Alice's team" });
  return ((await created.json()) as { id: string }).id;
}

/** Alice renames `ws` to `name` while every flush `failing` picks fails. */
async function renameFailing(ws: string, name: string, failing: (path: string) => boolean) {
  let response: Response | undefined;
  await journalDuring(
    async () => {
      response = await t.rest("alice", "PATCH", `/v1/workspaces/${ws}`, { name });
    },
    { sync: (path) => (failing(path) ? eio() : undefined) },
  );
  if (!response) throw new Error("no answer");
  return { status: response.status, body: (await response.json()) as { name?: string } };
}

const nameOnDisk = async (ws: string) =>
  (JSON.parse(await readFile(join(t.root, ws, "workspace.json"), "utf8")) as { name: string }).name;

const nameShown = async (ws: string) =>
  ((await (await t.rest("alice", "GET", `/v1/workspaces/${ws}`)).json()) as { name: string }).name;

describe("a rename whose workspace.json lands but whose folder flush fails", () => {
  it("is 200 with the name as on disk, which every reader sees", async () => {
    const ws = await newWorkspace();
    const folder = join(t.root, ws);
    const { status, body } = await renameFailing(ws, "  Renamed  ", (path) => path === folder);
    expect(status).toBe(200);
    expect(body.name).toBe("Renamed");
    expect(await nameOnDisk(ws)).toBe("Renamed");
    expect(await nameShown(ws)).toBe("Renamed");
  });
});

describe("a rename whose new file's own flush fails", () => {
  it("is 500, and leaves the name and the folder as they were", async () => {
    const ws = await newWorkspace();
    const folder = join(t.root, ws);
    const before = await readdir(folder);
    const { status } = await renameFailing(ws, "Never", (path) => path.startsWith(`${folder}/.tmp-`));
    expect(status).toBe(500);
    expect(await nameOnDisk(ws)).toBe("Alice's team");
    expect(await nameShown(ws)).toBe("Alice's team");
    expect(await readdir(folder)).toEqual(before);
  });
});
