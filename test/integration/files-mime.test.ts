import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { spawnAtriumCli } from "../helpers/cli.ts";
import { listTree } from "../helpers/fs-tree.ts";

let instance: TestAtrium;
let ws: string;

beforeAll(async () => {
  instance = await startTestAtrium();
  ws = await bootstrapWorkspace(instance, "alice");
});

afterAll(async () => {
  await instance?.stop();
});

function uploadRaw(contentType: string | undefined, body = "hello") {
  return instance.raw("alice", "POST", `/v1/workspaces/${ws}/files?name=a.bin`, {
    headers: contentType === undefined ? {} : { "content-type": contentType },
    body,
  });
}

async function storedFiles(): Promise<string[]> {
  return (await listTree(join(instance.root, ws))).filter((path) => /fl_[0-9a-f]{24}\/$/.test(path));
}

describe("MIME types are checked against RFC 9110", () => {
  it("files__write with a control character in mimeType is an isError result and stores nothing", async () => {
    const before = await storedFiles();
    const client = await instance.mcpClient("alice", ws);
    const result = await client.callTool({
      name: "files__write",
      arguments: { name: "x.txt", text: "y", mimeType: "text/plain;\u0001" },
    });
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toMatch(/not a MIME type/);
    expect(await storedFiles()).toEqual(before);
  });

  it.each([
    ["a parameter with no value", "text/plain; charset"],
    ["obs-text in a parameter", "text/plain; a=\u00e9"],
    ["no subtype", "text"],
  ])("an upload whose Content-Type has %s is 400 and stores nothing", async (_label, contentType) => {
    const before = await storedFiles();
    const response = await uploadRaw(contentType);
    expect(response.status).toBe(400);
    expect(JSON.parse(response.text)).toMatchObject({ error: { code: "invalid_input" } });
    expect(await storedFiles()).toEqual(before);
  });

  it("type and subtype are stored lowercased, parameters as sent", async () => {
    const response = await uploadRaw('Text/Plain; charset=UTF-8; note="A b"');
    expect(response.status).toBe(201);
    expect(JSON.parse(response.text).mimeType).toBe('text/plain; charset=UTF-8; note="A b"');
  });
});

describe("the type of a raw upload", () => {
  it.each([
    ["no Content-Type", undefined],
    ["the form default curl --data-binary adds", "application/x-www-form-urlencoded"],
    ["the form default with a charset", "application/x-www-form-urlencoded; charset=utf-8"],
  ])("an upload with %s is stored as application/octet-stream", async (_label, contentType) => {
    const response = await uploadRaw(contentType);
    expect(response.status).toBe(201);
    expect(JSON.parse(response.text).mimeType).toBe("application/octet-stream");
  });

  it("a multipart form upload is 415 and stores nothing", async () => {
    const before = await storedFiles();
    const response = await uploadRaw("multipart/form-data; boundary=x", "--x--\r\n");
    expect(response.status).toBe(415);
    expect(JSON.parse(response.text)).toMatchObject({ error: { code: "unsupported_media_type" } });
    expect(await storedFiles()).toEqual(before);
  });
});

describe("a file stored before MIME types were checked strictly", () => {
  it("downloads as application/octet-stream, and nothing reaches stderr", async ({ onTestFinished }) => {
    const dir = await mkdtemp(join(tmpdir(), "atrium-mime-"));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const instanceFile = join(dir, "instance.json");
    await writeFile(
      instanceFile,
      JSON.stringify({
        auth: { adapter: "dev" },
        storage: { root: "./data" },
        http: { host: "127.0.0.1", port: 0, publicUrl: "http://127.0.0.1:8787" },
        log: { level: "info" },
      }),
    );
    const cli = spawnAtriumCli(["serve", "--instance", instanceFile], dir);
    onTestFinished(async () => {
      await cli.stop();
    });
    const [, url] = await cli.waitForOutput(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
    const bootstrap = (await (await fetch(`${url}/v1/bootstrap`)).json()) as {
      workspaces: Array<{ id: string }>;
    };
    const devWs = bootstrap.workspaces[0]?.id ?? "";
    const uploaded = await fetch(`${url}/v1/workspaces/${devWs}/files?name=old.txt`, {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: "old bytes",
    });
    const meta = (await uploaded.json()) as { id: string; ownerId: string };
    // What an earlier Atrium wrote: a type with a control character, which Node cannot send.
    const metaFile = join(dir, "data", devWs, "files", meta.ownerId, meta.id, "meta.json");
    const stored = JSON.parse(await readFile(metaFile, "utf8")) as Record<string, unknown>;
    await writeFile(metaFile, JSON.stringify({ ...stored, mimeType: "text/plain;\u0001" }));

    for (let i = 0; i < 3; i++) {
      const download = await fetch(`${url}/v1/files/${meta.id}`);
      expect(download.status).toBe(200);
      expect(download.headers.get("content-type")).toBe("application/octet-stream");
      expect(await download.text()).toBe("old bytes");
    }
    const info = await fetch(`${url}/v1/files/${meta.id}/meta`);
    expect(info.status).toBe(200);
    expect(cli.stderr()).toBe("");
    for (const line of cli.stdout().split("\n")) {
      if (line.startsWith("{")) expect(() => JSON.parse(line)).not.toThrow();
    }
  });
});
