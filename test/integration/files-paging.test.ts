import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { CallToolResult } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";

// files__list and GET /v1/workspaces/:ws/files page with an opaque cursor, served from the
// partition's listing (src/platform/files/listings.ts); bare ids resolve through the locator.

interface Meta {
  id: string;
  name: string;
  createdAt: string;
}
interface Page {
  files: Meta[];
  nextCursor?: string;
}

let instance: TestAtrium;
let ws: string;
let uploaded: Meta[];

async function upload(name: string, workspace = ws, user = "alice"): Promise<Meta> {
  const response = await instance.rest(user, "POST", `/v1/workspaces/${workspace}/files?name=${name}`, name, {
    "content-type": "text/plain",
  });
  expect(response.status).toBe(201);
  return (await response.json()) as Meta;
}

async function page(query: string): Promise<Page> {
  const response = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/files${query}`);
  expect(response.status).toBe(200);
  return (await response.json()) as Page;
}

async function everyPage(limit: number): Promise<Page[]> {
  const pages: Page[] = [];
  let cursor: string | undefined;
  do {
    const next = await page(`?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    pages.push(next);
    cursor = next.nextCursor;
  } while (cursor && pages.length < 20);
  return pages;
}

beforeAll(async () => {
  instance = await startTestAtrium();
  ws = await bootstrapWorkspace(instance, "alice");
  uploaded = [];
  for (const name of ["a.txt", "b.txt", "c.txt", "d.txt", "e.txt"]) uploaded.push(await upload(name));
});

afterAll(async () => {
  await instance?.stop();
});

describe("REST paging", () => {
  it("pages of `limit` chain by nextCursor to every file once, newest first; the last has no cursor", async () => {
    const all = (await page("")).files.map((f) => f.id);
    expect(all).toHaveLength(5);
    const pages = await everyPage(2);
    expect(pages.map((p) => p.files.length)).toEqual([2, 2, 1]);
    expect(pages.map((p) => p.nextCursor === undefined)).toEqual([false, false, true]);
    expect(pages.flatMap((p) => p.files.map((f) => f.id))).toEqual(all);
    const times = pages.flatMap((p) => p.files.map((f) => f.createdAt));
    expect([...times].sort().reverse()).toEqual(times);
  });

  it("a limit equal to the count gives one page and no cursor", async () => {
    const one = await page("?limit=5");
    expect(one.files).toHaveLength(5);
    expect(one.nextCursor).toBeUndefined();
  });

  it("a bad limit or cursor is 400 saying what to send", async () => {
    for (const limit of ["0", "1001", "abc", "-1", "1.5", ""]) {
      const response = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/files?limit=${limit}`);
      expect(response.status, limit).toBe(400);
      expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(/limit/);
    }
    const forged = [
      "not-base64!",
      Buffer.from("[1,2]").toString("base64url"),
      Buffer.from('["2026-01-01T00:00:00.000Z","../../etc"]').toString("base64url"),
      Buffer.from('{"__proto__":1}').toString("base64url"),
    ];
    for (const cursor of forged) {
      const response = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/files?cursor=${cursor}`);
      expect(response.status, cursor).toBe(400);
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe("invalid_input");
      expect(body.error.message).toMatch(/cursor/);
    }
  });

  it("a cursor keeps working when the file it points after is deleted", async () => {
    const extra = [await upload("x1.txt"), await upload("x2.txt"), await upload("x3.txt")];
    const first = await page("?limit=2");
    const last = first.files[1];
    expect(last).toBeDefined();
    expect((await instance.rest("alice", "DELETE", `/v1/files/${last?.id}`)).status).toBe(204);
    const rest = await page(`?limit=100&cursor=${first.nextCursor}`);
    const seen = [...first.files, ...rest.files].map((f) => f.id);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(expect.arrayContaining(uploaded.map((f) => f.id)));
    for (const file of extra) {
      if (file.id !== last?.id) await instance.rest("alice", "DELETE", `/v1/files/${file.id}`);
    }
  });

  it("is served from the listing the writers keep, not by rereading each meta.json", async () => {
    await page("");
    const target = uploaded[0] as Meta;
    const metaPath = join(instance.root, ws, "files", testPrincipal("alice").id, target.id, "meta.json");
    const meta = JSON.parse(await readFile(metaPath, "utf8")) as Meta;
    await writeFile(metaPath, JSON.stringify({ ...meta, name: "changed-behind.txt" }));
    const names = (await page("")).files.map((f) => f.name);
    expect(names).toContain(target.name);
    expect(names).not.toContain("changed-behind.txt");
    // …and a write after the listing was built is in it at once, as is a delete.
    const late = await upload("late.txt");
    expect((await page("?limit=1")).files.map((f) => f.id)).toEqual([late.id]);
    await instance.rest("alice", "DELETE", `/v1/files/${late.id}`);
    expect((await page("")).files.map((f) => f.id)).not.toContain(late.id);
    await writeFile(metaPath, JSON.stringify(meta));
  });
});

describe("files__list paging", () => {
  it("answers a page with nextCursor, and the cursor gives the next page", async () => {
    const client = await instance.mcpClient("alice", ws);
    const first = (await client.callTool({ name: "files__list", arguments: { limit: 3 } })) as CallToolResult;
    const firstPage = first.structuredContent as unknown as Page;
    expect(firstPage.files).toHaveLength(3);
    expect(typeof firstPage.nextCursor).toBe("string");
    const second = (await client.callTool({
      name: "files__list",
      arguments: { cursor: firstPage.nextCursor },
    })) as CallToolResult;
    const secondPage = second.structuredContent as unknown as Page;
    expect(secondPage.nextCursor).toBeUndefined();
    expect([...firstPage.files, ...secondPage.files].map((f) => f.id)).toEqual(
      (await page("")).files.map((f) => f.id),
    );
  });

  it("a forged cursor is an isError result naming the cursor", async () => {
    const client = await instance.mcpClient("alice", ws);
    const result = (await client.callTool({
      name: "files__list",
      arguments: { cursor: "bm9wZQ" },
    })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toMatch(/cursor/);
  });
});

describe("the bare-id locator", () => {
  it("finds a file in any of the caller's workspaces, and only the owner's", async () => {
    const created = await instance.rest("alice", "POST", "/v1/workspaces", { name: "Second" });
    const second = ((await created.json()) as { id: string }).id;
    const file = await upload("elsewhere.txt", second);
    expect((await instance.rest("alice", "GET", `/v1/files/${file.id}`)).status).toBe(200);
    expect((await instance.rest("bob", "GET", `/v1/files/${file.id}`)).status).toBe(404);
    expect((await instance.rest("alice", "GET", "/v1/files/fl_000000000000000000000000")).status).toBe(404);
    expect((await instance.rest("alice", "GET", "/v1/files/not-an-id")).status).toBe(404);
  });

  it("is rebuilt at boot: a file stored before a restart is found by its bare id", async () => {
    const target = uploaded[2] as Meta;
    instance = await instance.restart();
    const response = await instance.rest("alice", "GET", `/v1/files/${target.id}/meta`);
    expect(response.status).toBe(200);
    expect(((await response.json()) as Meta).name).toBe(target.name);
    expect((await instance.rest("alice", "GET", `/v1/files/${target.id}`)).status).toBe(200);
  });
});
