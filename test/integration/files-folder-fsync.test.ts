import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  bootstrapWorkspace,
  capturingLogger,
  loggedErr,
  startTestAtrium,
  type TestAtrium,
  testPrincipal,
} from "../helpers/atrium.ts";
import { journalDuring } from "../helpers/fs-journal.ts";
import { listTree } from "../helpers/fs-tree.ts";

// A new file is stored once its rename into place is flushed in the owner folder (adr/0024). When
// that flush fails, the rename is undone before the client is answered, so an error always means
// "not stored": nothing listed, nothing readable, and a retry stores one file (adr/0112).

const ALICE = testPrincipal("alice").id;

let instance: TestAtrium;
let ws: string;
let ownerDir: string;
const captured = capturingLogger("warn");

beforeAll(async () => {
  instance = await startTestAtrium({ log: captured.log });
  ws = await bootstrapWorkspace(instance, "alice");
  ownerDir = join(instance.root, ws, "files", ALICE);
  // A file already there, so the owner folder is not new to the failing write.
  expect((await upload("first.txt", "first")).status).toBe(201);
});

afterAll(async () => {
  await instance?.stop();
});

/** Runs `work` while every flush of Alice's files folder fails as a failing disk's does. */
function withOwnerFolderFlushFailing<T>(work: () => Promise<T>): Promise<T> {
  let result: T | undefined;
  const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });
  return journalDuring(
    async () => {
      result = await work();
    },
    { sync: (path) => (path === ownerDir ? eio() : undefined) },
  ).then(() => result as T);
}

function upload(name: string, text: string) {
  const path = `/v1/workspaces/${ws}/files?name=${encodeURIComponent(name)}`;
  return instance.rest("alice", "POST", path, text, { "content-type": "text/plain" });
}

async function listedNames(): Promise<string[]> {
  const response = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/files`);
  return ((await response.json()) as { files: Array<{ name: string }> }).files.map((f) => f.name);
}

/** Everything in Alice's files folder and below: stored files and any staging folder. */
function storedEntries(): Promise<string[]> {
  return listTree(ownerDir);
}

describe("a failed flush of the owner folder after an upload's rename", () => {
  it("an upload is answered 500 and leaves no file: not listed, not on disk, and a retry stores one", async () => {
    const before = await storedEntries();
    const response = await withOwnerFolderFlushFailing(() => upload("unflushed.txt", "hello"));
    expect(response.status).toBe(500);
    const logged = captured.lines.filter((line) => line.msg === "unhandled error");
    expect(loggedErr(logged.at(-1)).message).toMatch(/^EIO/);
    expect(await storedEntries()).toEqual(before);
    expect(await listedNames()).not.toContain("unflushed.txt");

    const retry = await upload("unflushed.txt", "hello");
    expect(retry.status).toBe(201);
    const { id } = (await retry.json()) as { id: string };
    expect((await instance.rest("alice", "GET", `/v1/files/${id}`)).status).toBe(200);
    expect((await listedNames()).filter((name) => name === "unflushed.txt")).toHaveLength(1);
  });

  it("files__write is an isError result and leaves no file: not listed, not on disk", async () => {
    const before = await storedEntries();
    const client = await instance.mcpClient("alice", ws);
    const result = await withOwnerFolderFlushFailing(() =>
      client.callTool({ name: "files__write", arguments: { name: "unflushed-tool.txt", text: "hello" } }),
    );
    expect(result.isError).toBe(true);
    expect(await storedEntries()).toEqual(before);
    expect(await listedNames()).not.toContain("unflushed-tool.txt");
    const listed = await client.callTool({ name: "files__list", arguments: {} });
    expect(JSON.stringify(listed.structuredContent)).not.toContain("unflushed-tool.txt");
  });
});

describe("a failed flush of the owner folder after a delete's rename", () => {
  it("a delete is answered 500 and the file stays: listed and readable, and the next delete takes it", async () => {
    const stored = await upload("kept.txt", "still here");
    const { id } = (await stored.json()) as { id: string };
    const response = await withOwnerFolderFlushFailing(() =>
      instance.rest("alice", "DELETE", `/v1/files/${id}`),
    );
    expect(response.status).toBe(500);
    expect(await listedNames()).toContain("kept.txt");
    expect(await (await instance.rest("alice", "GET", `/v1/files/${id}`)).text()).toBe("still here");

    expect((await instance.rest("alice", "DELETE", `/v1/files/${id}`)).status).toBe(204);
    expect(await listedNames()).not.toContain("kept.txt");
  });
});
