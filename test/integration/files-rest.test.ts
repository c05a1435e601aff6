import { randomBytes } from "node:crypto";
import { type FileHandle, open } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  bootstrapWorkspace,
  capturingLogger,
  startTestAtrium,
  type TestAtrium,
  testPrincipal,
} from "../helpers/atrium.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { listTree } from "../helpers/fs-tree.ts";

const MAX_UPLOAD_BYTES = 64 * 1024;

let instance: TestAtrium;
let ws: string;
let wsDir: string;

// Files are listed newest first by createdAt: the test moves this clock between uploads.
const time = new FakeTime();

const captured = capturingLogger("warn");

beforeAll(async () => {
  instance = await startTestAtrium({
    maxUploadBytes: MAX_UPLOAD_BYTES,
    clock: time.clock,
    log: captured.log,
  });
  ws = await bootstrapWorkspace(instance, "alice");
  wsDir = join(instance.root, ws);
});

afterAll(async () => {
  await instance?.stop();
});

function upload(name: string, body: Uint8Array | string | ReadableStream<Uint8Array>, contentType?: string) {
  return instance.rest(
    "alice",
    "POST",
    `/v1/workspaces/${ws}/files?name=${encodeURIComponent(name)}`,
    body,
    contentType === undefined ? {} : { "content-type": contentType },
  );
}

/** A body with no Content-Length: fetch sends a ReadableStream chunked. */
function chunked(totalBytes: number, chunkBytes = 8 * 1024): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= totalBytes) {
        controller.close();
        return;
      }
      const size = Math.min(chunkBytes, totalBytes - sent);
      sent += size;
      controller.enqueue(new Uint8Array(size).fill(0x61));
    },
  });
}

/** Stored files only: the partition folders may exist, but no content, meta or staging. */
async function storedEntries(): Promise<string[]> {
  return (await listTree(wsDir)).filter((path) => !path.endsWith("/") || /(^|\/)(\.tmp-|fl_)/.test(path));
}

describe("upload limits", () => {
  it("an upload over the limit with a Content-Length is 413 and leaves nothing on disk", async () => {
    const before = await storedEntries();
    const response = await upload("too-big.bin", new Uint8Array(MAX_UPLOAD_BYTES + 1));
    expect(response.status).toBe(413);
    expect(response.headers.get("connection")).toBe("close");
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe("payload_too_large");
    expect(await storedEntries()).toEqual(before);
  });

  it("a chunked upload over the limit (no Content-Length) is 413 and leaves nothing on disk", async () => {
    const before = await storedEntries();
    expect(before).toEqual(["workspace.json"]);
    const response = await upload("streamed.bin", chunked(MAX_UPLOAD_BYTES * 2));
    expect(response.status).toBe(413);
    expect(response.headers.get("connection")).toBe("close");
    expect(await storedEntries()).toEqual(before);
    const list = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/files`);
    expect(((await list.json()) as { files: unknown[] }).files).toEqual([]);
  });

  it("a chunked upload of exactly the limit is stored", async () => {
    const response = await upload("exact.bin", chunked(MAX_UPLOAD_BYTES));
    expect(response.status).toBe(201);
    const meta = (await response.json()) as { id: string; size: number };
    expect(meta.size).toBe(MAX_UPLOAD_BYTES);
    expect((await instance.rest("alice", "DELETE", `/v1/files/${meta.id}`)).status).toBe(204);
  });

  it("files__write over the limit is an isError result and leaves nothing on disk", async () => {
    const before = await storedEntries();
    const client = await instance.mcpClient("alice", ws);
    const result = await client.callTool({
      name: "files__write",
      arguments: { name: "big.txt", base64: Buffer.alloc(MAX_UPLOAD_BYTES + 1).toString("base64") },
    });
    expect(result.isError).toBe(true);
    expect(await storedEntries()).toEqual(before);
  });
});

describe("upload, list, download, delete", () => {
  it("a binary upload downloads byte-identical", async () => {
    const bytes = Buffer.concat([Buffer.from(Array.from({ length: 256 }, (_, i) => i)), randomBytes(30_000)]);
    const response = await upload("blob.bin", bytes, "application/octet-stream");
    expect(response.status).toBe(201);
    const meta = (await response.json()) as { id: string; size: number; sha256: string; ownerId: string };
    expect(meta.size).toBe(bytes.byteLength);
    expect(meta.ownerId).toBe(testPrincipal("alice").id);

    const download = await instance.rest("alice", "GET", `/v1/files/${meta.id}`);
    expect(download.status).toBe(200);
    expect(download.headers.get("content-type")).toBe("application/octet-stream");
    expect(download.headers.get("content-length")).toBe(String(bytes.byteLength));
    expect(download.headers.get("x-content-type-options")).toBe("nosniff");
    expect(Buffer.from(await download.arrayBuffer()).equals(bytes)).toBe(true);
    expect(download.headers.get("etag")).toBe(`"${meta.sha256}"`);
  });

  it("an upload's 201 names the file's URL in Location and its download's ETag", async () => {
    const response = await upload("tagged.txt", "tag me", "text/plain");
    expect(response.status).toBe(201);
    const meta = (await response.json()) as { id: string; sha256: string };
    const location = response.headers.get("location");
    expect(location).toBe(`/v1/files/${meta.id}`);
    expect(response.headers.get("etag")).toBe(`"${meta.sha256}"`);
    const download = await instance.rest("alice", "GET", location ?? "");
    expect(download.headers.get("etag")).toBe(response.headers.get("etag"));
    expect(await download.text()).toBe("tag me");
  });

  it("an upload without a Content-Type is stored as application/octet-stream", async () => {
    const response = await upload("untyped", new Uint8Array([1, 2, 3]));
    expect(response.status).toBe(201);
    const { id } = (await response.json()) as { id: string };
    const meta = await instance.rest("alice", "GET", `/v1/files/${id}/meta`);
    expect(((await meta.json()) as { mimeType: string }).mimeType).toBe("application/octet-stream");
  });

  it("a name with a bidirectional override is refused, and the answer says why", async () => {
    const response = await upload("invoice\u202Efdp.exe", "x", "text/plain");
    expect(response.status).toBe(400);
    const { error } = (await response.json()) as { error: { message: string } };
    expect(error.message).toMatch(/bidirectional controls/);
  });

  it("a name made only of invisible characters is refused, and the answer says why and what to do", async () => {
    const response = await upload("\u200F\u200B", "x", "text/plain");
    expect(response.status).toBe(400);
    const { error } = (await response.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe("invalid_input");
    expect(error.message).toMatch(/at least one of them visible/);
    expect(error.message).toMatch(/Send the file again/);
  });

  it("an upload without a name is refused", async () => {
    const response = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/files`, "x");
    expect(response.status).toBe(400);
  });

  it("lists uploaded files, newest first", async () => {
    const first = (await (await upload("first.txt", "1", "text/plain")).json()) as { id: string };
    await time.advance(5);
    const second = (await (await upload("second.txt", "22", "text/plain")).json()) as { id: string };
    const list = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/files`);
    expect(list.status).toBe(200);
    const files = ((await list.json()) as { files: Array<{ id: string; name: string; size: number }> }).files;
    const ids = files.map((f) => f.id);
    expect(ids).toContain(first.id);
    expect(ids).toContain(second.id);
    expect(ids.indexOf(second.id)).toBeLessThan(ids.indexOf(first.id));
    expect(files.find((f) => f.id === second.id)).toMatchObject({ name: "second.txt", size: 2 });
  });

  it("a deleted file is 404 afterwards and gone from the list and the disk", async () => {
    const { id, ownerId } = (await (await upload("doomed.txt", "bye", "text/plain")).json()) as {
      id: string;
      ownerId: string;
    };
    expect((await instance.rest("alice", "GET", `/v1/files/${id}`)).status).toBe(200);
    expect((await instance.rest("alice", "DELETE", `/v1/files/${id}`)).status).toBe(204);

    expect((await instance.rest("alice", "GET", `/v1/files/${id}`)).status).toBe(404);
    expect((await instance.rest("alice", "GET", `/v1/files/${id}/meta`)).status).toBe(404);
    expect((await instance.rest("alice", "DELETE", `/v1/files/${id}`)).status).toBe(404);
    const list = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/files`);
    expect(((await list.json()) as { files: Array<{ id: string }> }).files.map((f) => f.id)).not.toContain(
      id,
    );
    expect((await listTree(wsDir)).filter((path) => path.includes(id))).toEqual([]);
    expect(await listTree(join(wsDir, "files", ownerId))).not.toContain(`${id}/`);
  });
});

describe("Content-Disposition", () => {
  it("names the file in filename* with every byte RFC 8187 attr-char leaves out percent-encoded", async () => {
    const name = "it's (a)*.txt — ü!#$&+^_`|~";
    const { id } = (await (await upload(name, "x", "text/plain")).json()) as { id: string };
    const response = await instance.rest("alice", "GET", `/v1/files/${id}`);
    const disposition = response.headers.get("content-disposition") ?? "";
    expect(disposition).toBe(
      "attachment; filename*=UTF-8''it%27s%20%28a%29%2A.txt%20%E2%80%94%20%C3%BC!%23%24%26%2B%5E_%60%7C~",
    );
    // Every value-char is an attr-char or a %XX (RFC 8187 §3.2.1), and it decodes to the name.
    const value = disposition.slice("attachment; filename*=UTF-8''".length);
    expect(value).toMatch(/^(?:[A-Za-z0-9!#$&+\-.^_`|~]|%[0-9A-F]{2})*$/);
    expect(decodeURIComponent(value)).toBe(name);
  });
});

describe("ranges", () => {
  async function stored(): Promise<{ id: string; sha256: string }> {
    return (await (await upload("ranged.txt", "cache me", "text/plain")).json()) as {
      id: string;
      sha256: string;
    };
  }
  const get = (id: string, headers: Record<string, string>) =>
    instance.rest("alice", "GET", `/v1/files/${id}`, undefined, headers);

  it.each([
    ["bytes=2-5", "che ", "bytes 2-5/8"],
    ["bytes=3-", "he me", "bytes 3-7/8"],
    ["bytes=-2", "me", "bytes 6-7/8"],
    ["bytes=6-100", "me", "bytes 6-7/8"],
  ])("Range %s is 206 with those bytes and where they sit", async (range, body, contentRange) => {
    const { id } = await stored();
    const response = await get(id, { range });
    expect(response.status).toBe(206);
    expect(response.headers.get("content-range")).toBe(contentRange);
    expect(response.headers.get("content-length")).toBe(String(body.length));
    expect(await response.text()).toBe(body);
  });

  it("a range past the end is 416 naming the size; several ranges, or another version's, get the whole file", async () => {
    const { id, sha256 } = await stored();
    const past = await get(id, { range: "bytes=8-" });
    expect(past.status).toBe(416);
    expect(past.headers.get("content-range")).toBe("bytes */8");
    const wholes: Record<string, string>[] = [
      { range: "bytes=0-1,3-4" },
      { range: "bytes=0-1", "if-range": '"0000"' },
    ];
    for (const headers of wholes) {
      const whole = await get(id, headers);
      expect(whole.status).toBe(200);
      expect(whole.headers.get("accept-ranges")).toBe("bytes");
      expect(await whole.text()).toBe("cache me");
    }
    const same = await get(id, { range: "bytes=0-1", "if-range": `"${sha256}"` });
    expect([same.status, await same.text()]).toEqual([206, "ca"]);
  });

  // RFC 9110 §14.1.1: a suffix of non-zero length is satisfiable for an empty representation;
  // a first byte position is not, there being none.
  it("a suffix range of an empty file is 200 with the empty body; bytes=0- of it is 416", async () => {
    const { id } = (await (await upload("empty.txt", "", "text/plain")).json()) as { id: string };
    const suffix = await get(id, { range: "bytes=-5" });
    expect(suffix.status).toBe(200);
    expect(suffix.headers.get("content-length")).toBe("0");
    expect(suffix.headers.get("content-range")).toBeNull();
    expect(await suffix.text()).toBe("");
    const first = await get(id, { range: "bytes=0-" });
    expect(first.status).toBe(416);
    expect(first.headers.get("content-range")).toBe("bytes */0");
  });
});

describe("conditional downloads", () => {
  async function stored(): Promise<{ id: string; sha256: string }> {
    return (await (await upload("cached.txt", "cache me", "text/plain")).json()) as {
      id: string;
      sha256: string;
    };
  }

  it.each([
    ["its ETag", (tag: string) => tag],
    ["its ETag marked weak", (tag: string) => `W/${tag}`],
    ["a list that holds it", (tag: string) => `"00", ${tag}`],
    ["*", () => "*"],
  ])("If-None-Match with %s is 304 with the ETag and no body, GET and HEAD", async (_case, header) => {
    const { id, sha256 } = await stored();
    const etag = `"${sha256}"`;
    for (const method of ["GET", "HEAD"]) {
      const response = await instance.raw("alice", method, `/v1/files/${id}`, {
        headers: { "if-none-match": header(etag) },
      });
      expect(response.status).toBe(304);
      expect(response.headers.etag).toBe(etag);
      expect(response.body.length).toBe(0);
    }
  });

  it("If-Match with another version is 412, GET, HEAD and DELETE alike, and deletes nothing", async () => {
    const { id, sha256 } = await stored();
    for (const method of ["GET", "HEAD", "DELETE"]) {
      const refused = await instance.raw("alice", method, `/v1/files/${id}`, {
        headers: { "if-match": '"not-it"' },
      });
      expect(refused.status).toBe(412);
    }
    const kept = await instance.rest("alice", "GET", `/v1/files/${id}`, undefined, {
      "if-match": `"${sha256}"`,
    });
    expect(await kept.text()).toBe("cache me");
    const deleted = await instance.rest("alice", "DELETE", `/v1/files/${id}`, undefined, {
      "if-match": `"${sha256}"`,
    });
    expect(deleted.status).toBe(204);
  });

  // Taken as no condition, an If-Match the client wrote without its quotes turned a conditional
  // delete into an unconditional one (ADR 0152).
  it.each([
    ["the file's own hash without its quotes", (sha256: string) => sha256],
    ["another tag without quotes", () => "not-it"],
    ["a list with an element that is not a tag", (sha256: string) => `"${sha256}", garbage`],
  ])(
    "If-Match with %s is 400 saying how to write it, GET, HEAD and DELETE alike, and deletes nothing",
    async (_case, header) => {
      const { id, sha256 } = await stored();
      for (const method of ["GET", "HEAD", "DELETE"]) {
        const refused = await instance.raw("alice", method, `/v1/files/${id}`, {
          headers: { "if-match": header(sha256) },
        });
        expect(refused.status).toBe(400);
        if (method !== "HEAD") expect(refused.body.toString()).toContain("double quotes");
      }
      const meta = await instance.rest("alice", "GET", `/v1/files/${id}/meta`);
      expect(meta.status).toBe(200);
    },
  );

  it("If-None-Match with other tags is 200 with the content", async () => {
    const { id } = await stored();
    const response = await instance.rest("alice", "GET", `/v1/files/${id}`, undefined, {
      "if-none-match": '"00", W/"11"',
    });
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("cache me");
  });

  // RFC 9110 §13.2.2: for a method that changes something, a false If-None-Match is 412, checked
  // after If-Match; `*` is false whenever the file exists (ADR 0152 amendment).
  it.each([
    ["*", () => ({ "if-none-match": "*" })],
    ["its ETag", (tag: string) => ({ "if-none-match": tag })],
    ["its ETag marked weak", (tag: string) => ({ "if-none-match": `W/${tag}` })],
    ["a list that holds it", (tag: string) => ({ "if-none-match": `"00", ${tag}` })],
    ["* and a matching If-Match", (tag: string) => ({ "if-match": tag, "if-none-match": "*" })],
  ])("DELETE with If-None-Match %s is 412, and deletes nothing", async (_case, headers) => {
    const { id, sha256 } = await stored();
    const refused = await instance.rest(
      "alice",
      "DELETE",
      `/v1/files/${id}`,
      undefined,
      headers(`"${sha256}"`),
    );
    expect(refused.status).toBe(412);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("precondition_failed");
    expect((await instance.rest("alice", "GET", `/v1/files/${id}/meta`)).status).toBe(200);
  });

  it("DELETE with If-None-Match listing other tags deletes", async () => {
    const { id, sha256 } = await stored();
    const deleted = await instance.rest("alice", "DELETE", `/v1/files/${id}`, undefined, {
      "if-match": `"${sha256}"`,
      "if-none-match": '"00", W/"11"',
    });
    expect(deleted.status).toBe(204);
  });

  it("an If-None-Match that is not entity tags is ignored by a GET, and refused by a DELETE", async () => {
    const { id, sha256 } = await stored();
    const read = await instance.rest("alice", "GET", `/v1/files/${id}`, undefined, {
      "if-none-match": sha256,
    });
    expect(read.status).toBe(200);
    const refused = await instance.rest("alice", "DELETE", `/v1/files/${id}`, undefined, {
      "if-none-match": sha256,
    });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain("double quotes");
    expect((await instance.rest("alice", "GET", `/v1/files/${id}/meta`)).status).toBe(200);
  });

  it("a matching If-None-Match still answers 404 for a file that is not the caller's", async () => {
    const { id, sha256 } = await stored();
    const response = await instance.rest("bob", "GET", `/v1/files/${id}`, undefined, {
      "if-none-match": `"${sha256}"`,
    });
    expect(response.status).toBe(404);
  });
});

type FullDisk = "ENOSPC" | "EDQUOT" | "EFBIG" | "short write";

describe("a full disk", () => {
  /**
   * Runs `work` while every FileHandle's writev fails as a full disk makes it: with ENOSPC, EDQUOT
   * (a quota) or EFBIG (a file-size limit), or short (some bytes stored, then the space ran out).
   */
  async function onFullDisk<T>(how: FullDisk, work: () => Promise<T>): Promise<T> {
    const probe = await open(fileURLToPath(import.meta.url), "r");
    const handles = Object.getPrototypeOf(probe) as FileHandle;
    await probe.close();
    const writev = handles.writev;
    handles.writev = async function (this: FileHandle, buffers: NodeJS.ArrayBufferView[], position?: number) {
      if (how !== "short write") throw Object.assign(new Error(`${how}: write failed`), { code: how });
      const first = buffers[0] as Uint8Array;
      const { bytesWritten } = await writev.call(this, [first.subarray(0, 1)], position);
      return { bytesWritten, buffers };
    } as FileHandle["writev"];
    try {
      return await work();
    } finally {
      handles.writev = writev;
    }
  }

  it.each(["ENOSPC", "EDQUOT", "EFBIG", "short write"] as const)(
    "an upload that meets a full disk (%s) is 507 insufficient_storage and leaves nothing",
    async (how) => {
      const before = await storedEntries();
      const response = await onFullDisk(how, () => upload("full.txt", "hello", "text/plain"));
      expect(response.status).toBe(507);
      const { error } = (await response.json()) as { error: { code: string; message: string } };
      expect(error.code).toBe("insufficient_storage");
      expect(error.message).toMatch(/storage is full.*nothing was stored/);
      expect(await storedEntries()).toEqual(before);
      // The operator is told, once, with what the filesystem said; as a condition, not a bug.
      const told = captured.lines.filter(
        (line) => line.msg === "storage full: a write was refused and nothing stored",
      );
      expect(told.at(-1)).toMatchObject({ level: 40, reason: how === "short write" ? "short write" : how });
      expect(captured.lines.filter((line) => line.msg === "unhandled error")).toEqual([]);
    },
  );

  it("files__write past files.maxUploadBytes says so of the file, not of an HTTP body", async () => {
    const client = await instance.mcpClient("alice", ws);
    const result = await client.callTool({
      name: "files__write",
      arguments: { name: "big.txt", text: "x".repeat(MAX_UPLOAD_BYTES + 1) },
    });
    expect(result.isError).toBe(true);
    const text = JSON.stringify(result.content);
    expect(text).toContain(`a file here is at most ${MAX_UPLOAD_BYTES} bytes`);
    expect(text).not.toContain("body");
  });

  it.each(["ENOSPC", "short write"] as const)(
    "files__write on a full disk (%s) is an isError result that says so, and leaves nothing",
    async (how) => {
      const before = await storedEntries();
      const client = await instance.mcpClient("alice", ws);
      const result = await onFullDisk(how, () =>
        client.callTool({ name: "files__write", arguments: { name: "full.txt", text: "hello" } }),
      );
      expect(result.isError).toBe(true);
      expect(JSON.stringify(result.content)).toMatch(/storage is full.*nothing was stored/);
      // Told to the operator from MCP as from REST: the router knows it across the in-memory pair.
      const told = captured.lines.filter(
        (line) => line.msg === "storage full: a write was refused and nothing stored",
      );
      expect(told.at(-1)).toMatchObject({ level: 40, reason: how, tool: "files__write" });
      expect(captured.lines.filter((line) => line.msg === "tool failed unexpectedly")).toEqual([]);
      expect(await storedEntries()).toEqual(before);
    },
  );
});
