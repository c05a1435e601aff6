import { cp, mkdir, mkdtemp, readFile, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { NotFound, PayloadTooLarge } from "../../../../src/errors.ts";
import { DISK_CHECK_MS, FILE_INDEX_IDLE_MS, FileListings } from "../../../../src/platform/files/listings.ts";
import type { FileMeta } from "../../../../src/platform/files/model.ts";
import { FileStore } from "../../../../src/platform/files/store.ts";
import { parseStoredJson } from "../../../../src/storage/atomic.ts";
import { RecoveryPass } from "../../../../src/storage/recovery.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { journalDuring } from "../../../helpers/fs-journal.ts";
import { gate } from "../../../helpers/gate.ts";
import { memoryLog } from "../../../helpers/memory-log.ts";
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

/** Reads a file's meta.json as the store does, noting each id read in `reads`. */
function countingReads(reads: string[]) {
  return async (workspaceId: string, ownerId: string, id: string): Promise<FileMeta> => {
    reads.push(id);
    const dir = temp.layout.partition("files").recordDir(workspaceId, ownerId, id);
    return JSON.parse(await readFile(join(dir, "meta.json"), "utf8")) as FileMeta;
  };
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
    const a = await files.write(ws, ALICE, { name: "a.txt" }, Buffer.from("a"), NO_CALLER);
    expect(await listed()).toEqual(["a.txt"]);
    await time.advance(1);
    const b = await files.write(ws, ALICE, { name: "b.txt" }, Buffer.from("b"), NO_CALLER);
    expect(await files.info(ws, ALICE, b.id)).toEqual(b);
    expect(await listed()).toEqual(["b.txt", "a.txt"]);
    await files.delete(ws, ALICE, a.id, NO_CALLER);
    await expect(files.info(ws, ALICE, a.id)).rejects.toBeInstanceOf(NotFound);
    expect(await listed()).toEqual(["b.txt"]);
  });

  it("answers info without reading meta.json once the partition is indexed", async () => {
    const a = await files.write(ws, ALICE, { name: "a.txt" }, Buffer.from("a"), NO_CALLER);
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
    const a = await files.write(ws, ALICE, { name: "a.txt" }, Buffer.from("a"), NO_CALLER);
    await time.advance(1);
    const b = await files.write(ws, ALICE, { name: "b.txt" }, Buffer.from("b"), NO_CALLER);
    await files.delete(ws, ALICE, a.id, NO_CALLER);
    const restarted = openStore();
    expect(await restarted.info(ws, ALICE, b.id)).toEqual(b);
    await expect(restarted.info(ws, ALICE, a.id)).rejects.toBeInstanceOf(NotFound);
    expect(await listed(restarted)).toEqual(["b.txt"]);
  });

  it("sees a file folder an operator removes on disk, once DISK_CHECK_MS has passed", async () => {
    const a = await files.write(ws, ALICE, { name: "a.txt" }, Buffer.from("a"), NO_CALLER);
    expect(await listed()).toEqual(["a.txt"]);
    await rm(recordDir(a.id), { recursive: true });
    await time.advance(DISK_CHECK_MS);
    await expect(files.info(ws, ALICE, a.id)).rejects.toBeInstanceOf(NotFound);
    expect(await listed()).toEqual([]);
  });

  it("looks at the disk again once the clock is stepped back behind its last look", async () => {
    const a = await files.write(ws, ALICE, { name: "a.txt" }, Buffer.from("a"), NO_CALLER);
    expect(await listed()).toEqual(["a.txt"]);
    await rm(recordDir(a.id), { recursive: true });
    // An hour back (an NTP correction): the index must not count as fresh until the hour is over.
    time.jump(-60 * 60 * 1000);
    expect(await listed()).toEqual([]);
  });

  it("sees a file folder an operator restores on disk, once DISK_CHECK_MS has passed", async () => {
    const a = await files.write(ws, ALICE, { name: "a.txt" }, Buffer.from("a"), NO_CALLER);
    const backup = await mkdtemp(join(tmpdir(), "atrium-backup-"));
    try {
      await cp(recordDir(a.id), join(backup, a.id), { recursive: true });
      await files.delete(ws, ALICE, a.id, NO_CALLER);
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
    const a = await files.write(ws, ALICE, { name: "a.txt" }, Buffer.from("a"), NO_CALLER);
    expect(await listed()).toEqual(["a.txt"]);
    await rm(recordDir(a.id), { recursive: true });
    // No time passes: the write itself finds the folder changed behind the index.
    await files.write(ws, ALICE, { name: "b.txt" }, Buffer.from("b"), NO_CALLER);
    await expect(files.info(ws, ALICE, a.id)).rejects.toBeInstanceOf(NotFound);
    expect(await listed()).toEqual(["b.txt"]);
  });

  it("sees a file another writer adds on disk, once DISK_CHECK_MS has passed", async () => {
    expect(await listed()).toEqual([]);
    const other = await openStore().write(ws, ALICE, { name: "elsewhere.txt" }, Buffer.from("e"), NO_CALLER);
    await time.advance(DISK_CHECK_MS);
    expect(await files.info(ws, ALICE, other.id)).toEqual(other);
    expect(await listed()).toEqual(["elsewhere.txt"]);
  });
});

describe("a copied file folder", () => {
  it("is its own file, named by its folder, and the index does not rebuild after each write", async () => {
    const a = await files.write(ws, ALICE, { name: "a.txt" }, Buffer.from("a"), NO_CALLER);
    expect(await listed()).toEqual(["a.txt"]);
    // An operator's `cp -r fl_A fl_B`: the copy's meta.json still says fl_A.
    const copyId = `fl_${"ab".repeat(12)}`;
    await cp(recordDir(a.id), recordDir(copyId), { recursive: true });
    await time.advance(DISK_CHECK_MS);
    const ids = (await files.page(ws, ALICE, {})).files.map((meta) => meta.id);
    expect(ids.sort()).toEqual([a.id, copyId].sort());
    expect(await files.info(ws, ALICE, copyId)).toEqual({ ...a, id: copyId });
    expect(await files.info(ws, ALICE, a.id)).toEqual(a);
    const journal = await journalDuring(async () => {
      await time.advance(1);
      await files.write(ws, ALICE, { name: "b.txt" }, Buffer.from("b"), NO_CALLER);
      await time.advance(DISK_CHECK_MS);
      expect(await listed()).toHaveLength(3);
    });
    expect(journal.read.filter((path) => path.endsWith("meta.json"))).toEqual([]);
    // A bare id finds the copy once housekeeping has walked the folder (no writer told the locator).
    await expect(files.locate(ALICE, copyId, () => true)).rejects.toThrow(NotFound);
    await files.recoverWorkspace(ws, new Set(["files"]), RecoveryPass.housekeeping(Date.now()));
    expect(await files.locate(ALICE, copyId, () => true)).toBe(ws);
    // Deleting the original leaves the copy, and a restart names it alike.
    await files.delete(ws, ALICE, a.id, NO_CALLER);
    expect((await openStore().page(ws, ALICE, {})).files.map((meta) => meta.id)).toContain(copyId);
    expect((await openStore().info(ws, ALICE, copyId)).id).toBe(copyId);
  });
});

describe("the store's own writes", () => {
  it("never make the index read a partition of many files again: writes, a failed upload, deletes", async () => {
    const kept: FileMeta[] = [];
    for (let n = 0; n < 150; n++)
      kept.push(await files.write(ws, ALICE, { name: `f${n}` }, Buffer.from("x"), NO_CALLER));
    expect((await files.page(ws, ALICE, { limit: 1000 })).files).toHaveLength(150);
    const journal = await journalDuring(async () => {
      await time.advance(1);
      const added = await files.write(ws, ALICE, { name: "new.txt" }, Buffer.from("y"), NO_CALLER);
      expect(await files.info(ws, ALICE, added.id)).toEqual(added);
      const tooLarge = Readable.from([Buffer.alloc(MAX_BYTES + 1)]);
      await expect(files.upload(ws, ALICE, { name: "big" }, tooLarge, NO_CALLER)).rejects.toBeInstanceOf(
        PayloadTooLarge,
      );
      await time.advance(DISK_CHECK_MS);
      expect((await listed())[0]).toBe("new.txt");
      await files.delete(ws, ALICE, added.id, NO_CALLER);
      await files.delete(ws, ALICE, kept[0]?.id ?? "", NO_CALLER);
      await time.advance(DISK_CHECK_MS);
      await expect(files.info(ws, ALICE, added.id)).rejects.toBeInstanceOf(NotFound);
      expect(await files.info(ws, ALICE, kept[1]?.id ?? "")).toEqual(kept[1]);
      await time.advance(DISK_CHECK_MS);
      expect((await files.page(ws, ALICE, { limit: 1000 })).files).toHaveLength(149);
    });
    expect(journal.read.filter((path) => path.endsWith("meta.json"))).toEqual([]);
  });

  it("do not hide an operator's edit made while an upload is on its way", async () => {
    const a = await files.write(ws, ALICE, { name: "a.txt" }, Buffer.from("a"), NO_CALLER);
    await time.advance(1);
    await files.write(ws, ALICE, { name: "b.txt" }, Buffer.from("b"), NO_CALLER);
    expect(await listed()).toEqual(["b.txt", "a.txt"]);
    const started = gate();
    const arrived = gate();
    async function* body(): AsyncGenerator<Buffer> {
      started.open();
      yield Buffer.from("c");
      await arrived.promise;
    }
    await time.advance(1);
    const uploading = files.upload(ws, ALICE, { name: "c.txt" }, Readable.from(body()), NO_CALLER);
    // The upload's staging folder is made: the operator removes a file folder meanwhile.
    await started.promise;
    await rm(recordDir(a.id), { recursive: true });
    arrived.open();
    await uploading;
    await time.advance(DISK_CHECK_MS);
    await expect(files.info(ws, ALICE, a.id)).rejects.toBeInstanceOf(NotFound);
    expect(await listed()).toEqual(["c.txt", "b.txt"]);
  });

  it("an edit in the same timestamp tick as the index's own change is seen by the folder's names", async () => {
    const a = await files.write(ws, ALICE, { name: "a.txt" }, Buffer.from("a"), NO_CALLER);
    await time.advance(1);
    const b = await files.write(ws, ALICE, { name: "b.txt" }, Buffer.from("b"), NO_CALLER);
    const reads: string[] = [];
    const readMeta = countingReads(reads);
    const index = new FileListings(temp.layout.partition("files"), readMeta, time.clock);
    const ownerDir = temp.layout.partition("files").ownerDir(ws, ALICE);
    // A kernel with coarse timestamps gives every change within one tick the same mtime; pinned
    // here to one second so the test does not depend on the kernel it runs on.
    const TICK_S = 1_700_000_000;
    const ownStep = (name: string) =>
      index.change(ws, ALICE, async () => {
        await mkdir(join(ownerDir, `.tmp-${name}`));
        await utimes(ownerDir, TICK_S, TICK_S);
        return undefined;
      });
    expect(await index.get(ws, ALICE, b.id)).toEqual(b);
    expect(reads.sort()).toEqual([a.id, b.id].sort());

    await ownStep("one");
    await time.advance(DISK_CHECK_MS);
    expect(await index.get(ws, ALICE, a.id)).toEqual(a);
    expect(reads).toHaveLength(2); // the same names: nothing read again

    await ownStep("two");
    await rm(recordDir(a.id), { recursive: true });
    await utimes(ownerDir, TICK_S, TICK_S);
    await time.advance(DISK_CHECK_MS);
    expect(await index.get(ws, ALICE, a.id)).toBeUndefined();
    expect(await index.get(ws, ALICE, b.id)).toEqual(b);
  });
});

describe("a meta.json that cannot be read", () => {
  it("is left out of the list, fails its info with its own error, and is served once repaired", async () => {
    const a = await files.write(ws, ALICE, { name: "a.txt" }, Buffer.from("a"), NO_CALLER);
    await time.advance(1);
    const b = await files.write(ws, ALICE, { name: "b.txt" }, Buffer.from("b"), NO_CALLER);
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

// adr/0076: a meta.json that parses but is not a file's metadata is treated as one that does not
// parse, named by its path and what is wrong, never by its text.
describe("a meta.json that parses but is not a file's metadata", () => {
  it.each([
    ["an empty object", () => "{}", "its name is not a string"],
    ["null", () => "null", "it is not a JSON object"],
    ["an array", () => "[]", "it is not a JSON object"],
    ["a number", () => "5", "it is not a JSON object"],
    ["a size that is text", (m: FileMeta) => ({ ...m, size: "abc" }), "its size is not a whole number"],
    ["a negative size", (m: FileMeta) => ({ ...m, size: -1 }), "its size is not a whole number"],
    ["a name that is not a string", (m: FileMeta) => ({ ...m, name: ["secret-name"] }), "its name is not"],
    ["no MIME type", (m: FileMeta) => ({ ...m, mimeType: undefined }), "its mimeType is not"],
    ["a digest that is not hex", (m: FileMeta) => ({ ...m, sha256: '"\nx' }), "its sha256 is not"],
    ["a creation time that is not one", (m: FileMeta) => ({ ...m, createdAt: 7 }), "its createdAt is not"],
  ])(
    "(%s) is left out of the list, logged once naming its path and what is wrong, and fails its info",
    async (_case, damage, problem) => {
      const a = await files.write(ws, ALICE, { name: "a.txt" }, Buffer.from("a"), NO_CALLER);
      await time.advance(1);
      await files.write(ws, ALICE, { name: "b.txt" }, Buffer.from("b"), NO_CALLER);
      const path = join(recordDir(a.id), "meta.json");
      const damaged = damage(JSON.parse(await readFile(path, "utf8")) as FileMeta);
      await writeFile(path, typeof damaged === "string" ? damaged : JSON.stringify(damaged));
      const { log, lines } = memoryLog();
      const restarted = new FileStore(
        temp.layout.partition("files"),
        MAX_BYTES,
        temp.events,
        time.clock,
        log,
      );
      expect(await listed(restarted)).toEqual(["b.txt"]);
      await expect(restarted.info(ws, ALICE, a.id)).rejects.toThrow(problem);
      await expect(restarted.read(ws, ALICE, a.id)).rejects.toThrow(path);
      expect(await listed(restarted)).toEqual(["b.txt"]);
      const warnings = lines.filter((line) => /left out of listings/.test(String(line.msg)));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatchObject({ level: 40, path, fileId: a.id });
      expect(String(warnings[0]?.reason)).toContain(problem);
      expect(JSON.stringify(lines)).not.toContain("secret-name");
    },
  );
});

describe("a file left out of the lists", () => {
  it("is logged once, by its meta.json's path, however often the partition is built again", async () => {
    const a = await files.write(ws, ALICE, { name: "a.txt" }, Buffer.from("a"), NO_CALLER);
    const path = join(recordDir(a.id), "meta.json");
    await writeFile(path, "{ not json");
    const { log, lines } = memoryLog();
    // The store's own reader: a meta.json that does not parse is CorruptJson, named by place.
    const readMeta = (_workspaceId: string, _ownerId: string, id: string) =>
      readFile(join(recordDir(id), "meta.json"), "utf8").then(
        (text) => parseStoredJson(join(recordDir(id), "meta.json"), text) as FileMeta,
      );
    const index = new FileListings(temp.layout.partition("files"), readMeta, time.clock, log);
    expect((await index.page(ws, ALICE, {})).files).toEqual([]);
    await index.sweep(time.clock() + FILE_INDEX_IDLE_MS);
    expect((await index.page(ws, ALICE, {})).files).toEqual([]);
    const warnings = lines.filter((line) => /left out of listings/.test(String(line.msg)));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 40, path, fileId: a.id });
    expect(warnings[0]?.reason).toMatch(/line 1, column 3|ends before/);
    expect(JSON.stringify(warnings)).not.toContain("not json");
  });

  it("is logged by the store the files app runs, with the logger it is given", async () => {
    const a = await files.write(ws, ALICE, { name: "a.txt" }, Buffer.from("a"), NO_CALLER);
    await writeFile(join(recordDir(a.id), "meta.json"), "{ not json");
    const { log, lines } = memoryLog();
    const store = new FileStore(temp.layout.partition("files"), MAX_BYTES, temp.events, time.clock, log);
    expect((await store.page(ws, ALICE, {})).files).toEqual([]);
    expect(lines.filter((line) => /left out of listings/.test(String(line.msg)))).toHaveLength(1);
  });
});

describe("the index's memory", () => {
  it("is dropped for a workspace idle FILE_INDEX_IDLE_MS and rebuilt true on its next use", async () => {
    const a = await files.write(ws, ALICE, { name: "a.txt" }, Buffer.from("a"), NO_CALLER);
    const reads: string[] = [];
    const readMeta = countingReads(reads);
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

  it("names a meta.json that does not parse by its path and position, never its text", async () => {
    const a = await files.write(ws, ALICE, { name: "a.txt" }, Buffer.from("a"), NO_CALLER);
    const meta = join(recordDir(a.id), "meta.json");
    await writeFile(meta, '{"name": sk-live-secret');
    const failure = await openStore()
      .info(ws, ALICE, a.id)
      .catch((error: unknown) => error as Error);
    expect(failure).toBeInstanceOf(SyntaxError);
    expect((failure as Error).message).toContain(meta);
    expect((failure as Error).message).not.toContain("sk-live");
  });
});
