import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { NotFound } from "../../../../src/errors.ts";
import { DISK_CHECK_MS, FILE_INDEX_IDLE_MS, FileListings } from "../../../../src/platform/files/listings.ts";
import type { FileMeta } from "../../../../src/platform/files/model.ts";
import { FileStore } from "../../../../src/platform/files/store.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// The file metadata index (src/platform/files/listings.ts, adr/0050) answers info and lists
// from memory; these hold it true to the disk through the store's writes and deletes, a
// restart, an operator's edit, and its eviction.
const ALICE = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";
const MAX_BYTES = 1024 * 1024;

let temp: TempRoot;
let ws: string;
let time: FakeTime;
let files: FileStore;

function openStore(): FileStore {
  return new FileStore(temp.layout.partition("files"), MAX_BYTES, temp.events, time.clock);
}

function recordDir(id: string): string {
  return temp.layout.partition("files").recordDir(ws, ALICE, id);
}

async function listed(store = files): Promise<string[]> {
  return (await store.page(ws, ALICE, {})).files.map((meta) => meta.name);
}

beforeEach(async () => {
  temp = await openTempRoot("file-index", ALICE);
  ws = temp.ws;
  time = new FakeTime();
  files = openStore();
});

afterEach(async () => {
  await temp.remove();
});

describe("the file metadata index", () => {
  it("follows the store's own writes and deletes", async () => {
    const a = await files.write(ws, ALICE, { name: "a.txt" }, Buffer.from("a"));
    expect(await listed()).toEqual(["a.txt"]);
    await time.advance(1);
    const b = await files.write(ws, ALICE, { name: "b.txt" }, Buffer.from("b"));
    expect(await files.info(ws, ALICE, b.id)).toEqual(b);
    expect(await listed()).toEqual(["b.txt", "a.txt"]);
    await files.delete(ws, ALICE, a.id);
    await expect(files.info(ws, ALICE, a.id)).rejects.toBeInstanceOf(NotFound);
    expect(await listed()).toEqual(["b.txt"]);
  });

  it("answers info without reading meta.json once the partition is indexed", async () => {
    const a = await files.write(ws, ALICE, { name: "a.txt" }, Buffer.from("a"));
    await files.info(ws, ALICE, a.id);
    // Changed in place, the folder's entries stay as they were: the index is not asked to look.
    const path = join(recordDir(a.id), "meta.json");
    await writeFile(
      path,
      JSON.stringify({ ...JSON.parse(await readFile(path, "utf8")), name: "changed.txt" }),
    );
    await time.advance(DISK_CHECK_MS * 5);
    expect((await files.info(ws, ALICE, a.id)).name).toBe("a.txt");
    // A new store (a restart) reads the disk again.
    expect((await openStore().info(ws, ALICE, a.id)).name).toBe("changed.txt");
  });

  it("is the same after a restart", async () => {
    const a = await files.write(ws, ALICE, { name: "a.txt" }, Buffer.from("a"));
    await time.advance(1);
    const b = await files.write(ws, ALICE, { name: "b.txt" }, Buffer.from("b"));
    await files.delete(ws, ALICE, a.id);
    const restarted = openStore();
    expect(await restarted.info(ws, ALICE, b.id)).toEqual(b);
    await expect(restarted.info(ws, ALICE, a.id)).rejects.toBeInstanceOf(NotFound);
    expect(await listed(restarted)).toEqual(["b.txt"]);
  });

  it("sees a file folder an operator removes on disk, once DISK_CHECK_MS has passed", async () => {
    const a = await files.write(ws, ALICE, { name: "a.txt" }, Buffer.from("a"));
    expect(await listed()).toEqual(["a.txt"]);
    await rm(recordDir(a.id), { recursive: true });
    await time.advance(DISK_CHECK_MS);
    await expect(files.info(ws, ALICE, a.id)).rejects.toBeInstanceOf(NotFound);
    expect(await listed()).toEqual([]);
  });

  it("sees a file folder an operator restores on disk, once DISK_CHECK_MS has passed", async () => {
    const a = await files.write(ws, ALICE, { name: "a.txt" }, Buffer.from("a"));
    const backup = await mkdtemp(join(tmpdir(), "atrium-backup-"));
    try {
      await cp(recordDir(a.id), join(backup, a.id), { recursive: true });
      await files.delete(ws, ALICE, a.id);
      expect(await listed()).toEqual([]);
      await cp(join(backup, a.id), recordDir(a.id), { recursive: true });
      await time.advance(DISK_CHECK_MS);
      expect(await files.info(ws, ALICE, a.id)).toEqual(a);
      expect(await listed()).toEqual(["a.txt"]);
    } finally {
      await rm(backup, { recursive: true, force: true });
    }
  });

  it("does not let its own next write hide an operator's earlier edit", async () => {
    const a = await files.write(ws, ALICE, { name: "a.txt" }, Buffer.from("a"));
    expect(await listed()).toEqual(["a.txt"]);
    await rm(recordDir(a.id), { recursive: true });
    // No time passes: the write itself finds the folder changed behind the index.
    await files.write(ws, ALICE, { name: "b.txt" }, Buffer.from("b"));
    await expect(files.info(ws, ALICE, a.id)).rejects.toBeInstanceOf(NotFound);
    expect(await listed()).toEqual(["b.txt"]);
  });

  it("sees a file another writer adds on disk, once DISK_CHECK_MS has passed", async () => {
    expect(await listed()).toEqual([]);
    const other = await openStore().write(ws, ALICE, { name: "elsewhere.txt" }, Buffer.from("e"));
    await time.advance(DISK_CHECK_MS);
    expect(await files.info(ws, ALICE, other.id)).toEqual(other);
    expect(await listed()).toEqual(["elsewhere.txt"]);
  });
});

describe("a meta.json that cannot be read", () => {
  it("is left out of the list, fails its info with its own error, and is served once repaired", async () => {
    const a = await files.write(ws, ALICE, { name: "a.txt" }, Buffer.from("a"));
    await time.advance(1);
    const b = await files.write(ws, ALICE, { name: "b.txt" }, Buffer.from("b"));
    const path = join(recordDir(a.id), "meta.json");
    const good = await readFile(path, "utf8");
    await writeFile(path, "{ not json");
    const restarted = openStore();
    expect(await listed(restarted)).toEqual(["b.txt"]);
    await expect(restarted.info(ws, ALICE, a.id)).rejects.toBeInstanceOf(SyntaxError);
    await writeFile(path, good);
    expect(await restarted.info(ws, ALICE, a.id)).toEqual(a);
    expect(await listed(restarted)).toEqual(["b.txt", "a.txt"]);
    expect(await restarted.info(ws, ALICE, b.id)).toEqual(b);
  });
});

describe("the index's memory", () => {
  it("is dropped for a workspace idle FILE_INDEX_IDLE_MS and rebuilt true on its next use", async () => {
    const a = await files.write(ws, ALICE, { name: "a.txt" }, Buffer.from("a"));
    const reads: string[] = [];
    const readMeta = async (workspaceId: string, ownerId: string, id: string): Promise<FileMeta> => {
      reads.push(id);
      const dir = temp.layout.partition("files").recordDir(workspaceId, ownerId, id);
      return JSON.parse(await readFile(join(dir, "meta.json"), "utf8")) as FileMeta;
    };
    const index = new FileListings(temp.layout.partition("files"), readMeta, time.clock);
    expect(await index.get(ws, ALICE, a.id)).toEqual(a);
    expect(await index.get(ws, ALICE, a.id)).toEqual(a);
    expect(reads).toEqual([a.id]);
    expect(index.size).toBe(1);

    await index.sweep(time.clock() + FILE_INDEX_IDLE_MS - 1);
    expect(index.size).toBe(1);
    await index.sweep(time.clock() + FILE_INDEX_IDLE_MS);
    expect(index.size).toBe(0);

    expect(await index.get(ws, ALICE, a.id)).toEqual(a);
    expect(reads).toEqual([a.id, a.id]);
  });
});
