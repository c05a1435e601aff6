import { createHash, randomBytes } from "node:crypto";
import { readdir, readlink, rm, truncate } from "node:fs/promises";
import { request } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  bootstrapWorkspace,
  capturingLogger,
  loggedErr,
  startTestAtrium,
  TEST_USER_HEADER,
  type TestAtrium,
} from "../helpers/atrium.ts";
import { listTree } from "../helpers/fs-tree.ts";

// Downloads are piped from disk straight to Node's socket and uploads read from Node's request
// stream (adr/0050): these hold the bytes, the headers and the failures to what they were.
const MAX_UPLOAD_BYTES = 8 * 1024 * 1024;
/** Over the 1 MiB read chunk and the 1 MiB write batch, and not a multiple of either. */
const LARGE_BYTES = 3 * 1024 * 1024 + 17;

let instance: TestAtrium;
let ws: string;
const { log, lines } = capturingLogger();

beforeAll(async () => {
  instance = await startTestAtrium({ maxUploadBytes: MAX_UPLOAD_BYTES, log });
  ws = await bootstrapWorkspace(instance, "alice");
});

afterAll(async () => {
  await instance?.stop();
});

async function upload(name: string, body: Uint8Array | ReadableStream<Uint8Array>) {
  const response = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/files?name=${name}`, body, {
    "content-type": "application/octet-stream",
  });
  expect(response.status).toBe(201);
  return (await response.json()) as { id: string; size: number; sha256: string; ownerId: string };
}

/** A chunked body (no Content-Length) in uneven small chunks. */
function inChunks(bytes: Uint8Array, chunkBytes: number): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= bytes.byteLength) return controller.close();
      controller.enqueue(bytes.slice(sent, sent + chunkBytes));
      sent += chunkBytes;
    },
  });
}

function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** Stored files and staging folders under the workspace. */
async function fileEntries(): Promise<string[]> {
  return (await listTree(join(instance.root, ws))).filter((path) => /(^|\/)(\.tmp-|fl_)/.test(path));
}

describe("downloads", () => {
  it("a file larger than a read chunk downloads byte-identical with its headers and request id", async () => {
    const bytes = randomBytes(LARGE_BYTES);
    const meta = await upload("large.bin", bytes);
    const response = await instance.rest("alice", "GET", `/v1/files/${meta.id}`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-length")).toBe(String(LARGE_BYTES));
    expect(response.headers.get("etag")).toBe(`"${sha256(bytes)}"`);
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(response.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    expect(Buffer.from(await response.arrayBuffer()).equals(bytes)).toBe(true);
    const logged = lines.find((line) => line.requestId === response.headers.get("x-request-id"));
    expect(logged).toMatchObject({ method: "GET", path: `/v1/files/${meta.id}`, status: 200 });
  });

  it("a HEAD answers the headers and no body", async () => {
    const meta = await upload("head.bin", randomBytes(1000));
    const response = await instance.raw("alice", "HEAD", `/v1/files/${meta.id}`);
    expect(response.status).toBe(200);
    expect(response.headers["content-length"]).toBe("1000");
    expect(response.body.byteLength).toBe(0);
  });

  it("a file whose content is gone from disk is 404, not a broken download", async () => {
    const meta = await upload("vanishing.bin", randomBytes(100));
    await rm(join(instance.root, ws, "files", meta.ownerId, meta.id, "content"));
    const response = await instance.rest("alice", "GET", `/v1/files/${meta.id}`);
    expect(response.status).toBe(404);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe("file_not_found");
  });

  it("a client that goes away mid-download leaves the server serving the file to the next", async () => {
    const bytes = randomBytes(LARGE_BYTES);
    const meta = await upload("abandoned.bin", bytes);
    await abandonDownload(meta.id);
    const again = await instance.rest("alice", "GET", `/v1/files/${meta.id}`);
    expect(Buffer.from(await again.arrayBuffer()).equals(bytes)).toBe(true);
  });

  // The copy reads into two reused buffers and closes the file itself (web/send-file.ts); the
  // server runs in this process, so its open files are this process's.
  it.runIf(process.platform === "linux")(
    "a download closes its file, read to the end or left by its client mid-way",
    async () => {
      const meta = await upload("closed.bin", randomBytes(LARGE_BYTES));
      const content = join(instance.root, ws, "files", meta.ownerId, meta.id, "content");
      await (await instance.rest("alice", "GET", `/v1/files/${meta.id}`)).arrayBuffer();
      await abandonDownload(meta.id);
      // Until the copy has seen the client go; a leaked handle never gets here (the test times out).
      while ((await openHandlesTo(content)) > 0) await new Promise((resolve) => setImmediate(resolve));
      expect(await openHandlesTo(content)).toBe(0);
    },
  );
});

/** Starts downloading the file and goes away on its first bytes. */
function abandonDownload(fileId: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port: instance.atrium.port,
        path: `/v1/files/${fileId}`,
        headers: { [TEST_USER_HEADER]: "alice" },
      },
      (res) => res.once("data", () => resolve(void req.destroy())),
    );
    req.on("error", reject).end();
  });
}

/** How many of this process's file descriptors are open on `path` (Linux's /proc). */
async function openHandlesTo(path: string): Promise<number> {
  const fds = await readdir("/proc/self/fd");
  const targets = await Promise.all(fds.map((fd) => readlink(`/proc/self/fd/${fd}`).catch(() => "")));
  return targets.filter((target) => target === path).length;
}

describe("uploads", () => {
  it("a chunked upload in small uneven chunks is stored byte-identical with its sha256", async () => {
    const bytes = randomBytes(LARGE_BYTES);
    const meta = await upload("chunked.bin", inChunks(bytes, 7 * 1024 + 3));
    expect(meta.size).toBe(LARGE_BYTES);
    expect(meta.sha256).toBe(sha256(bytes));
    const response = await instance.rest("alice", "GET", `/v1/files/${meta.id}`);
    expect(Buffer.from(await response.arrayBuffer()).equals(bytes)).toBe(true);
  });

  // Its chunks are written and flushed behind the writes (8 MiB, storage/synced-file-writer.ts,
  // adr/0054) before the fsync that precedes the rename.
  it("an upload of exactly the limit with a Content-Length is stored byte-identical with its sha256", async () => {
    const bytes = randomBytes(MAX_UPLOAD_BYTES);
    const meta = await upload("limit.bin", bytes);
    expect(meta.size).toBe(MAX_UPLOAD_BYTES);
    expect(meta.sha256).toBe(sha256(bytes));
    const response = await instance.rest("alice", "GET", `/v1/files/${meta.id}`);
    expect(response.headers.get("etag")).toBe(`"${sha256(bytes)}"`);
    expect(Buffer.from(await response.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it("uploads running at once each get their own bytes and sha256", async () => {
    const bodies = [randomBytes(LARGE_BYTES), randomBytes(LARGE_BYTES - 1000), randomBytes(5)];
    const metas = await Promise.all(bodies.map((bytes, i) => upload(`together-${i}.bin`, bytes)));
    for (const [i, meta] of metas.entries()) {
      const bytes = bodies[i] as Buffer;
      expect(meta.sha256).toBe(sha256(bytes));
      const response = await instance.rest("alice", "GET", `/v1/files/${meta.id}`);
      expect(Buffer.from(await response.arrayBuffer()).equals(bytes)).toBe(true);
    }
  });

  it("an upload whose client goes away mid-body leaves nothing on disk", async () => {
    const before = await fileEntries();
    await new Promise<void>((resolve) => {
      const req = request({
        host: "127.0.0.1",
        port: instance.atrium.port,
        method: "POST",
        path: `/v1/workspaces/${ws}/files?name=torn.bin`,
        headers: { [TEST_USER_HEADER]: "alice", "content-length": String(LARGE_BYTES) },
      });
      req.on("error", () => resolve());
      req.write(randomBytes(LARGE_BYTES / 3), () => {
        req.destroy();
        resolve();
      });
    });
    // The server logs the request when its handler has finished with it (cleanup included).
    while (
      !lines.some(
        (line) => line.method === "POST" && line.path === `/v1/workspaces/${ws}/files` && line.status !== 201,
      )
    ) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(await fileEntries()).toEqual(before);
    // The client's leaving is not Atrium's failure: no error line for it.
    expect(lines.filter((line) => line.level === 50 || line.msg === "unhandled error")).toEqual([]);
    const failed = lines.filter(
      (line) => line.method === "POST" && line.path === `/v1/workspaces/${ws}/files` && line.status !== 201,
    );
    expect(failed.map((line) => line.status)).toEqual([499]);
  });

  it("a name whose percent-encoding is not UTF-8 is refused, and nothing is stored", async () => {
    const before = await fileEntries();
    const response = await fetch(`${instance.url}/v1/workspaces/${ws}/files?name=%FF.bin`, {
      method: "POST",
      headers: { [TEST_USER_HEADER]: "alice" },
      body: "x",
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { message: string } }).error.message).toContain("percent");
    expect(await fileEntries()).toEqual(before);
  });

  it("a name percent-encoded as UTF-8 is stored decoded, with + as a space", async () => {
    const response = await fetch(`${instance.url}/v1/workspaces/${ws}/files?name=caf%C3%A9+100%25.txt`, {
      method: "POST",
      headers: { [TEST_USER_HEADER]: "alice" },
      body: "x",
    });
    expect(response.status).toBe(201);
    expect(((await response.json()) as { name: string }).name).toBe("café 100%.txt");
  });
});

// A content file cut short or grown outside Atrium: measured against its metadata before any
// header goes out, so a download never promises a Content-Length it cannot keep (a keep-alive
// client would read the next answer as the rest of this one) and files__read never passes the
// bytes there are for the file. Refused as an unreadable content file is: an unexpected error.
describe("content whose size on disk is not its metadata's", () => {
  it.each([
    ["cut short", 10],
    ["grown", 1500],
  ])("(%s) is refused before anything is sent, and the log names its path once", async (_case, onDisk) => {
    const meta = await upload(`resized-${onDisk}.bin`, randomBytes(1000));
    const path = join(instance.root, ws, "files", meta.ownerId, meta.id, "content");
    await truncate(path, onDisk);

    const download = await instance.rest("alice", "GET", `/v1/files/${meta.id}`);
    expect(download.status).toBe(500);
    expect(download.headers.get("content-length")).not.toBe("1000");
    const requestId = download.headers.get("x-request-id");
    const text = await download.text();
    expect(JSON.parse(text)).toMatchObject({ error: { code: "internal_error" } });
    expect(text).not.toContain(instance.root);
    const logged = lines.filter((line) => line.requestId === requestId && line.level === 50);
    expect(logged).toHaveLength(1);
    expect(loggedErr(logged[0]).message).toContain(`${path} holds ${onDisk} bytes, not the 1000`);

    const read = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/tools/call`, {
      name: "files__read",
      arguments: { id: meta.id },
    });
    const result = (await read.json()) as { isError?: boolean; content: Array<{ text: string }> };
    expect(result.isError).toBe(true);
    expect(result.content[0]?.text).toMatch(/^Tool "files__read" failed unexpectedly/);
  });
});

describe("an upload whose workspace is archived while its body arrives", () => {
  it("is answered the 404 of an archived workspace, logs no error and leaves nothing, in the archive or anywhere", async () => {
    const logged = lines.length;
    const created = await instance.rest("alice", "POST", "/v1/workspaces", { name: "Doomed" });
    const doomed = ((await created.json()) as { id: string }).id;
    const req = request({
      host: "127.0.0.1",
      port: instance.atrium.port,
      method: "POST",
      path: `/v1/workspaces/${doomed}/files?name=late.bin`,
      headers: { [TEST_USER_HEADER]: "alice", "content-length": String(LARGE_BYTES) },
    });
    const answered = new Promise<{ status: number; body: string }>((resolve, reject) => {
      req.on("response", (res) => {
        let body = "";
        res.on("data", (chunk: Buffer) => {
          body += chunk.toString();
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on("error", reject);
    });
    const first = 1024 * 1024;
    req.write(randomBytes(first));
    // Until the upload's staging folder holds the first bytes.
    const staging = () =>
      listTree(join(instance.root, doomed)).then((paths) => paths.some((p) => /\.tmp-fl_.*content$/.test(p)));
    while (!(await staging())) await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await instance.rest("alice", "DELETE", `/v1/workspaces/${doomed}`)).status).toBe(204);
    req.end(randomBytes(LARGE_BYTES - first));

    const { status, body } = await answered;
    const gone = await instance.rest("alice", "GET", `/v1/workspaces/${doomed}/files`);
    expect([status, body]).toEqual([404, await gone.text()]);
    const archive = await listTree(join(instance.root, "_archive"));
    expect(archive.filter((path) => path.includes(doomed) && /(^|\/)\.tmp-/.test(path))).toEqual([]);
    expect(lines.slice(logged).filter((line) => line.level === 50)).toEqual([]);
  });
});
